"""SavedModel export: the kept encoder (TF Hub interface) and fine-tuned heads over raw text."""
