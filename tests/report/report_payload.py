"""The markup planted by the report tests (a module of its own: `conftest` names collide across test dirs)."""

#: text planted in cmdline, env vars, log lines and metric labels; if any of it ever ran it
#: would change the title and log XSS-RAN
PAYLOAD = ('<script>document.title="PWNED";console.log("XSS-RAN")</script>'
           '"><img src=x onerror="document.title=\'PWNED\';console.log(\'XSS-RAN\')">{{7*7}}')
