"""One secret of every kind, planted in the lab's env, cmdline, log lines and metric labels.

Values avoid HTML's special characters so a plain byte search also covers report.html.
"""

from __future__ import annotations

HF = "hf_SecTestHuggingFace0123456789abcdefXY"
OPENAI = "sk-proj-SecTestOpenAi0123456789abcdefghij"
AWS_ID = "AKIA" + "SECTEST0123456AB"
AWS_SECRET = "SecTestAwsSecret/0123456789+abcdefghijkl"
GHP = "ghp_" + "SecTestGithub0123456789abcdefghijklmn"
GH_PAT = "github_pat_11SECTEST0_SecTestFineGrained0123456789abcdef"
SLACK = "xoxb-123456789012-SecTestSlackToken0123"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTZWNUZXN0In0.SecTestJwtSig0123456789_abcdef"
PEM_LINES = ("MIIEpAIBAAKCAQEASecTestPemLineOne0123456789abcdefghij", "SecTestPemLineTwo0123456789ABCDEFGHIJ+/==")
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----"
URL_PW = "SecTestUrlPassw0rd"
URL = f"postgres://sgl:{URL_PW}@db.internal:5432/kv"

# env vars caught by name only (the values have no tell-tale shape)
ENV_BY_NAME = {
    "SERVICE_TOKEN": "SecTestNameToken01", "ENCRYPTION_KEY": "SecTestNameKey02",
    "CLIENT_SECRET": "SecTestNameSecret03", "DB_PASSWORD": "SecTestNamePassword04",
    "SMTP_PASSWD": "SecTestNamePasswd05", "GCP_CREDENTIALS": "SecTestNameCredential06",
    "PROXY_AUTH": "SecTestNameAuth07", "UI_COOKIE": "SecTestNameCookie08",
    "WANDB_SESSION": "SecTestNameSession09", "SIGNING_PRIVATE": "SecTestNamePrivate10",
    "HF_TOKEN": HF, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
}
# env vars with innocent names: only the value's shape gives them away
ENV_BY_SHAPE = {
    "NOTE_OPENAI": OPENAI, "NOTE_AWS_ID": AWS_ID, "NOTE_GH": GHP, "NOTE_GH_PAT": GH_PAT,
    "NOTE_SLACK": SLACK, "NOTE_JWT": JWT, "NOTE_PEM": PEM, "NOTE_DB_URL": URL,
}
FLAGS = (
    "--api-key", "SecTestFlagApiKey11", "--admin-api-key=SecTestFlagAdmin12", "--hf-token", HF,
    "--my-secret-token", "SecTestFlagToken13", "--db-secret=SecTestFlagSecret14",
    "--kv-store-url", "redis://:SecTestFlagUrlPw15@kv:6379/0",
    "--extra-header", "Authorization: Bearer SecTestFlagBearer16",
)
LOG_LINES = (
    f"Loading weights with token {HF}",
    f"fallback keys {OPENAI} {AWS_ID}",
    f"aws_secret_access_key = {AWS_SECRET}",
    f"git {GHP} {GH_PAT} chat {SLACK}",
    f"session jwt {JWT}",
    f"client key:\n{PEM}",
    f"connecting to {URL}",
    "request headers: Authorization: Bearer SecTestLogBearer17",
    "ServerArgs(model_path='/models/x', api_key='SecTestLogRepr18', admin_api_key=None)",
    "GET /generate?token=SecTestLogQuery19&stream=1",
    f"retrying login as sgl with {ENV_BY_NAME['DB_PASSWORD']}",  # a learned value, bare
)
LABELS = {
    "api_key": "SecTestLabelKey20", "upstream": "https://bob:SecTestLabelPw21@hub.internal/x",
    "hf": HF, "auth_header": "Bearer SecTestLabelBearer22", "jwt": JWT,
}

# what must never be found in a bundle, a report or the tool's output
NEEDLES = sorted({
    HF, OPENAI, AWS_ID, AWS_SECRET, GHP, GH_PAT, SLACK, JWT, *PEM_LINES, URL_PW,
    *ENV_BY_NAME.values(), *(v for v in FLAGS if v.startswith("SecTest")),
    "SecTestFlagAdmin12", "SecTestFlagSecret14", "SecTestFlagUrlPw15", "SecTestFlagBearer16",
    "SecTestLogBearer17", "SecTestLogRepr18", "SecTestLogQuery19",
    "SecTestLabelKey20", "SecTestLabelPw21", "SecTestLabelBearer22",
})
