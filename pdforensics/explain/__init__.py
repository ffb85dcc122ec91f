"""`pdforensics explain KEY`: what a rule, doctor check or log signature key means, the
evidence it needs, what to do, and where the docs say more."""
