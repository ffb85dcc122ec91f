"""Reading what someone else made (a bundle, an archive) without a path out of it."""
