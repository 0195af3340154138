"""What the learned allocators share: their checkpoint files, early stopping, and training status lines."""
