"""The real engine lab: SGLang 0.5.23 on the CPU as a PD pair behind the real smg (docs/lab.md)."""
