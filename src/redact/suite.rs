//! The measured suite: realistic secrets and harmless look-alikes (written next).
