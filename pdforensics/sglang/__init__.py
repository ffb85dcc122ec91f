"""SGLang processes found on a host: servers, their ranks and roles, from ps."""
