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

# shapes that leaked before the detectors knew them (issue #20), and others nobody planted before
DICT_KEY, DICT_BEARER = "SecTestDictKey23", "SecTestDictBearer24"
YAML_KEY, YAML_PW = "SecTestYamlKey25", ("SecTestYamlPw26a", "SecTestYamlPw26b")
CURL_PW = "SecTestCurlPw27"
SLACK_HOOK = "SecTestSlackHook28"
GOOGLE = "AIza" + "SecTestGoogleKey29_0123456789abcdef"
STRIPE = "sk_live_" + "SecTestStripe30abcdef0123"
GITLAB = "glpat-" + "SecTestGitlab31abcdef"
AZURE_SIG = "SecTestAzureSig32%2Fabc%3D"
# base64 of {"auths":{"registry.internal":{"auth":"..."}}}, a docker config passed in an env var
DOCKER_B64 = "eyJhdXRocyI6eyJyZWdpc3RyeS5pbnRlcm5hbCI6eyJhdXRoIjoiYzJWamRHVnpkRHBUWldOVVpYTjBSRzlqYTJWeU16TT0ifX19"
MULTI_FLAG = ("SecTestMultiA34", "SecTestMultiB35")  # one argv word with a space in it
MULTI_LOG = ("SecTestMultiC36", "SecTestMultiD37")
AT_PW = ("SecTestAtPw38", "SecTestAtPw39")  # postgres://u:p@q@db
UNIT_ENV = ("SecTestUnitA40", "SecTestUnitB41")  # Environment="HF_TOKEN=a b"
NPM = "npm_" + "SecTestNpm42abcdefghijklmnopqrstuvw"
ANTHROPIC = "sk-ant-api03-" + "SecTestAnthropic43_abcdefghij"
GCP_KEY = "SecTestGcpKey44abcdefghij0123456789"
BASIC_URL_PW = "SecTestBasic45"
NETRC_PW = "SecTestNetrc46"
KUBE_TOKEN = "SecTestKubeToken47"
VAULT = "hvs." + "SecTestVault48abcdefghijklmnop"
WHSEC = "whsec_" + "SecTestWhsec49abcdefgh"
GOOGLE_OAUTH = "ya29." + "SecTestGoogleOauth50abcdef"
PLAIN_ENV = "SecTestPlainEnv54"  # no tell-tale name or shape: only the allowlist hides it

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
    "REGISTRY_CONFIG_B64": DOCKER_B64, "NOTE_STRIPE": STRIPE, "NOTE_GITLAB": GITLAB, "NOTE_NPM": NPM,
    "NOTE_ANTHROPIC": ANTHROPIC, "NOTE_VAULT": VAULT, "NOTE_GOOGLE": GOOGLE,
}
# env vars with innocent names and values of no known shape: hashed because not on the allowlist
ENV_PLAIN = {"APP_SETTINGS": PLAIN_ENV}
# env vars that must stay readable (the seed's culprit is not in the 0.5.23 catalog)
ENV_KEPT = {"SGLANG_SM120_MMA_TARGET_CTAS": "512", "NCCL_IB_HCA": "mlx5_0,mlx5_1"}
FLAGS = (
    "--api-key", "SecTestFlagApiKey11", "--admin-api-key=SecTestFlagAdmin12", "--hf-token", HF,
    "--my-secret-token", "SecTestFlagToken13", "--db-secret=SecTestFlagSecret14",
    "--kv-store-url", "redis://:SecTestFlagUrlPw15@kv:6379/0",
    "--extra-header", "Authorization: Bearer SecTestFlagBearer16",
    "--ssl-keyfile-password", " ".join(MULTI_FLAG),
)
LOG_LINES: tuple[str, ...] = (
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
    f"config {{'api_key': '{DICT_KEY}', 'port': 30000}}",
    f"headers={{'Authorization': 'Bearer {DICT_BEARER}', 'Accept': '*/*'}}",
    f"api_key: {YAML_KEY}",
    f"password: {YAML_PW[0]} {YAML_PW[1]}",
    f"probe: curl -u admin:{CURL_PW} http://127.0.0.1:1/health",
    f"alert posted to https://hooks.slack.com/services/T0SECTEST/B0SECTEST/{SLACK_HOOK}",
    f"GET https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE}",
    f"billing {STRIPE} repo {GITLAB} hook {WHSEC}",
    f"upload https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig={AZURE_SIG}&se=2030-01-01",
    f"registry config {DOCKER_B64}",
    f'relaunch: python -m sglang.launch_server --api-key "{MULTI_LOG[0]} {MULTI_LOG[1]}" --port 1',
    f"cache at postgres://u:{AT_PW[0]}@{AT_PW[1]}@db.internal/kv",
    f'unit: Environment="HF_TOKEN={UNIT_ENV[0]} {UNIT_ENV[1]}"',
    f"npm {NPM} claude {ANTHROPIC} vault {VAULT} gcloud {GOOGLE_OAUTH}",
    '{"type": "service_account", "private_key_id": "abc", "private_key": '
    f'"-----BEGIN PRIVATE KEY-----\\n{GCP_KEY}\\n-----END PRIVATE KEY-----\\n", "client_email": "a@b"}}',
    f"pull https://bob:{BASIC_URL_PW}@registry.internal/v2/",
    f"netrc: machine registry.internal login bob password {NETRC_PW}",
    f"    token: {KUBE_TOKEN}",
)
# issue 32: syntaxes and shapes the detectors did not know, one log line (or block) each
I32 = {
    "toml": "SecTestI32Toml60", "yaml_next": "SecTestI32YamlNext61", "continued": "SecTestI32Cont62",
    "tuple": "SecTestI32Tuple63", "spaced_key": "SecTestI32DbPw64", "xml": "SecTestI32Xml65",
    "mysql": "SecTestI32Mysql66", "netrc_eq": "SecTestI32Netrc67", "arrow": "SecTestI32Arrow68",
    "pair": "SecTestI32Pair69", "sql": "SecTestI32Sql70", "sshpass": "SecTestI32Sshpass71",
    "hadoop": "SecTestI32Hadoop72",
}
XAPP = "xapp-1-A0SECTEST73-0123456789-" + "abcdef0123456789abcdef0123456789"
DAPI = "dapi" + "ABCDEF0123456789ABCDEF0123456789"
MAILGUN = "key-" + "0123456789abcdef0123456789abcdef"
GROQ = "gsk_" + "SecTestGroq74abcdefghij0123"
LOG_LINES_I32 = (
    f'config: api_key = "{I32["toml"]}"',
    f"settings:\n  api_key:\n    {I32['yaml_next']}\n  port: 30000",
    f"relaunch: python -m sglang.launch_server --api-key \\\n    {I32['continued']} \\\n    --port 30000",
    f"args [('api_key', '{I32['tuple']}'), ('port', 1)]",
    f'credentials {{"db password": "{I32["spaced_key"]}"}}',
    f"<config><password>{I32['xml']}</password></config>",
    f"backup: mysql -h db -u root -p{I32['mysql']} kv",
    f"netrc: machine db login bob password = {I32['netrc_eq']}",
    f"settings api_key -> {I32['arrow']}",
    f"env:\n- name: DB_PASSWORD\n  value: {I32['pair']}",
    f"sql: ALTER ROLE kv WITH LOGIN PASSWORD '{I32['sql']}';",
    f"ssh: sshpass -p {I32['sshpass']} ssh kv",
    f"<property><name>fs.s3a.secret.key</name><value>{I32['hadoop']}</value></property>",
    f"slack app {XAPP} databricks {DAPI} mailgun {MAILGUN} groq {GROQ}",
    "client sent key SecTestFlagApiKey11 (rejected)",  # the server's own --api-key, bare: learned
)
LOG_LINES = LOG_LINES + LOG_LINES_I32
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
    DICT_KEY, DICT_BEARER, YAML_KEY, *YAML_PW, CURL_PW, SLACK_HOOK, GOOGLE, STRIPE, GITLAB, AZURE_SIG,
    DOCKER_B64, *MULTI_FLAG, *MULTI_LOG, *AT_PW, *UNIT_ENV, NPM, ANTHROPIC, GCP_KEY, BASIC_URL_PW,
    NETRC_PW, KUBE_TOKEN, VAULT, WHSEC, GOOGLE_OAUTH, PLAIN_ENV,
    *I32.values(), XAPP, DAPI, MAILGUN, GROQ,
})
