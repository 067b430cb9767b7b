"""The Ansible playbooks, for real, on this machine.

ansible-lint's production profile passes (and refuses a broken copy). ``site.yml``
installs the appliance into a scratch prefix from an offline bundle the appliance itself
built and signed: the bundle is verified first, the runtime comes from its wheelhouse
alone, and a second run changes nothing. No systemd runs here, so the installed web
service is started with its unit's own command line, as the unit's user, behind the
installed TLS proxy (nginx with a certificate from a test CA); it answers ``/health`` and
a clinician's question over HTTPS. Then an upgrade to a newer release keeps the data and
backs it up first, and ``rollback.yml`` goes back; the audit log verifies throughout.

The bundle holds the real dependency wheels (about 3 GB); pip's cache makes a rerun on
the same machine quick. The language-model extra (llama.cpp, compiled) is left out: the
installed service answers with the extractive generator.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from appliance.index.base import STORE_LAYOUT_VERSION
from appliance.settings import PROJECT_ROOT
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, SLOW, free_port, wait_until_answers

BIN = Path(sys.executable).parent
ANSIBLE = PROJECT_ROOT / "ansible"
SERVER_CACHE = Path(
    os.environ.get("APPLIANCE_SERVER_CACHE", Path.home() / ".cache" / "appliance-servers")
)
SERVICE_USER = "appliance-ci"
NEWER_LAYOUT = str(int(STORE_LAYOUT_VERSION) + 1)
PASSWORD = "converge test password"
# Interpreter discovery would pick a pyenv shim here: name a real interpreter, one the
# service user may run (the system's, not one under /root).
REAL_PYTHON = "/usr/bin/python3.11" if Path("/usr/bin/python3.11").is_file() else sys.executable

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("sudo") is None or shutil.which("nginx") is None,
    reason="the converge runs as root with sudo and nginx (.ci/run installs both)",
)


def test_ansible_lint_production_profile_passes_and_refuses_a_broken_copy(
    tmp_path: Path,
) -> None:
    linted = _lint(ANSIBLE)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "Profile 'production' was required, and it passed" in linted.stderr
    broken = tmp_path / "ansible"
    shutil.copytree(ANSIBLE, broken)
    tasks = broken / "roles" / "appliance" / "tasks" / "host.yml"
    # A shell task with no name, no change condition and a short module name.
    tasks.write_text(tasks.read_text() + "\n- shell: chmod -R 777 /var/lib/appliance\n")
    refused = _lint(broken)
    assert refused.returncode != 0
    assert "fqcn" in refused.stdout + refused.stderr


def _lint(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "ansible-lint"), "--offline", "--profile", "production", "--nocolor"],
        cwd=folder, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
    )  # fmt: skip


@dataclass(frozen=True)
class Site:
    """A scratch host: its prefix, its inventory and variables, and the signing key."""

    root: Path
    prefix: Path
    inventory: Path
    variables: Path
    key: Path
    certificate_authority: Path
    web_port: int
    proxy_port: int

    def playbook(self, playbook: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", str(self.inventory), "-c", "local",
             "-e", f"ansible_python_interpreter={REAL_PYTHON}", "-e", f"@{self.variables}",
             *extra, playbook],
            cwd=ANSIBLE, capture_output=True, text=True, timeout=1500,
            env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
                 "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"},
        )  # fmt: skip

    def installed(self, *path: str) -> Path:
        return self.prefix.joinpath(*path)

    def operator(
        self, program: str, *arguments: str, **options: str
    ) -> subprocess.CompletedProcess[str]:
        """An operator's command as the role installed it (it runs the current release as
        the service user, with the host's settings)."""
        return subprocess.run(
            [str(self.installed("usr", "local", "bin", program)), *arguments],
            capture_output=True, text=True, timeout=600, cwd="/", **options,
        )  # fmt: skip


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The PLAY RECAP's counts for the one host."""
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("localhost"))
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


def task_outcome(output: str, task: str) -> str:
    """How the first task whose name starts with ``task`` ended: ok, changed, skipping..."""
    header = next(
        line for line in output.splitlines() if line.startswith("TASK [") and task in line
    )
    rest = output.split(header, 1)[1]
    found = re.search(r"^(ok|changed|skipping|fatal|failed)\b", rest, re.MULTILINE)
    assert found, rest[:500]
    return found.group(1)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("site")
    # The scratch host lives where the service user can walk to it.
    root.chmod(0o755)
    for parent in root.parents:
        if parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o005)
    key = root / "keys" / "bundle-signing.pem"
    subprocess.run([str(BIN / "appliance"), "bundle", "key", str(key)], check=True)
    authority, certificate, private_key = _certificates(root / "tls")
    web_port, proxy_port, redirect_port = free_port(), free_port(), free_port()
    variables = {
        "appliance_prefix": str(root / "host"),
        "appliance_user": SERVICE_USER,
        "appliance_group": SERVICE_USER,
        "appliance_manage_services": False,
        "appliance_system_python": REAL_PYTHON,
        "appliance_bundle_public_key": str(key.with_suffix(".pub")),
        "appliance_listen_port": web_port,
        "appliance_service_audit_key_export_dir": str(root / "audit-keys"),
        "opensearch_user": f"{SERVICE_USER}-search",
        "neo4j_user": f"{SERVICE_USER}-graph",
        "tls_proxy_install_package": False,
        "tls_proxy_certificate": str(certificate),
        "tls_proxy_key": str(private_key),
        "tls_proxy_server_name": "localhost",
        "tls_proxy_listen_address": "127.0.0.1",
        "tls_proxy_port": proxy_port,
        "tls_proxy_redirect_port": redirect_port,
        "firewall_intranet_networks": ["10.0.0.0/8"],
    }
    (root / "variables.json").write_text(json.dumps(variables))
    inventory = root / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n"
        + "".join(
            f"    {group}:\n      hosts:\n        localhost:\n"
            for group in ("appliance", "opensearch", "neo4j")
        )
    )
    yield Site(root, root / "host", inventory, root / "variables.json", key, authority,
               web_port, proxy_port)  # fmt: skip
    # Bundles and installed releases take about 10 GB: not kept for later runs to find.
    shutil.rmtree(root, ignore_errors=True)


def build_bundle(site: Site, name: str, *extra: str) -> Path:
    bundle = site.root / name
    built = subprocess.run(
        [str(BIN / "appliance"), "bundle", "build", str(bundle), "--key", str(site.key),
         "--extras", "", "--server-cache", str(SERVER_CACHE), *extra],
        capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    return bundle


@pytest.fixture(scope="module")
def installed(site: Site) -> Path:
    """A bundle of this checkout, installed once by site.yml (the first run's recap is
    kept beside it)."""
    bundle = build_bundle(site, "bundle")
    first = site.playbook("site.yml", "-e", f"appliance_bundle_dir={bundle}")
    (site.root / "first-run.txt").write_text(first.stdout)
    counts = recap(first)
    assert counts["failed"] == 0 and counts["changed"] > 0, counts
    return bundle


def test_an_altered_bundle_is_refused_before_anything_is_installed(site: Site) -> None:
    bundle = build_bundle(site, "unwheeled", "--no-wheels")
    policy = bundle / "policies" / "policy.csv"
    policy.write_bytes(policy.read_bytes() + b"p, role:anyone, *, read, allow\n")
    elsewhere = site.root / "refused-host"
    refused = site.playbook(
        "site.yml", "-e", f"appliance_bundle_dir={bundle}", "-e", f"appliance_prefix={elsewhere}"
    )
    assert refused.returncode != 0
    assert "policies/policy.csv differs from the signed manifest" in refused.stdout
    assert not (elsewhere / "opt" / "appliance" / "releases" / "0.1.0").exists()


def test_site_installs_from_the_verified_bundle_and_a_second_run_changes_nothing(
    site: Site, installed: Path
) -> None:
    assert "changed=" in (site.root / "first-run.txt").read_text()
    second = recap(site.playbook("site.yml", "-e", f"appliance_bundle_dir={installed}"))
    assert second["changed"] == 0 and second["failed"] == 0, second

    # What the roles left: hardened units, closed permissions, the audit key exported.
    unit = site.installed("etc", "systemd", "system", "appliance-web.service").read_text()
    for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                      f"User={SERVICE_USER}"):  # fmt: skip
        assert hardening in unit
    data = site.installed("var", "lib", "appliance")
    assert data.stat().st_mode & 0o777 == 0o700
    assert (data / "audit" / "checkpoint-key.pem").stat().st_mode & 0o077 == 0
    exported = site.root / "audit-keys" / "localhost-audit.pub"
    assert exported.read_bytes() == (data / "audit" / "checkpoint-key.pub").read_bytes()
    settings = site.installed("etc", "appliance", "settings.toml")
    assert settings.stat().st_mode & 0o777 == 0o640
    assert (
        site.installed("etc", "appliance", "tls", "appliance.key").stat().st_mode & 0o777 == 0o600
    )
    assert site.installed("opt", "opensearch", "current", "bin", "opensearch").is_file()
    assert site.installed("etc", "systemd", "system", "neo4j.service").is_file()
    assert (site.installed("etc", "appliance", "neo4j-password").stat().st_mode & 0o777) == 0o640
    assert "policy drop" in site.installed("etc", "nftables.d", "appliance.nft").read_text()
    # The installed release runs from its own environment, with the bundle's models.
    version = site.operator("appliance", "version", "--json")
    assert json.loads(version.stdout)["version"] == "0.1.0", version.stderr
    models = site.operator("appliance", "models", "verify")
    assert models.returncode == 0, models.stdout + models.stderr


def test_the_installed_service_answers_behind_the_tls_proxy(site: Site, installed: Path) -> None:
    _load_documents_and_accounts(site)
    with _running_service(site), _running_proxy(site):
        client = httpx.Client(
            base_url=f"https://localhost:{site.proxy_port}",
            verify=ssl.create_default_context(cafile=site.certificate_authority), timeout=120,
        )  # fmt: skip
        assert client.get("/health").status_code == 200
        client.get("/")
        signed_in = client.post(
            "/api/login", json={"user_id": "dr-okafor", "password": PASSWORD},
            headers={"x-csrftoken": client.cookies.get("csrftoken", "")},
        )  # fmt: skip
        assert signed_in.status_code in (200, 201), signed_in.text
        assert "secure" in signed_in.headers.get("set-cookie", "").lower()
        answer = client.post(
            "/api/ask", json={"question": "How long should I rub my hands with alcohol gel?"},
            headers={"x-csrftoken": client.cookies["csrftoken"]},
        )  # fmt: skip
        assert answer.status_code == 200, (site.root / "service.log").read_text()[-3000:]
        body = answer.json()
        assert not body["refused"] and body["sentences"][0]["citations"]
        plain = httpx.get(f"http://127.0.0.1:{site.proxy_port}/health", timeout=10)
        assert plain.status_code == 400  # plain HTTP on the TLS port is refused
    verified = site.operator("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.skipif(not SLOW, reason="slow mode (APPLIANCE_SLOW_TESTS=1): a second release")
def test_an_upgrade_keeps_the_data_and_a_rollback_goes_back(site: Site, installed: Path) -> None:
    before = site.operator("appliance", "docs", "list", "--json")
    documents = json.loads(before.stdout)
    assert documents, before.stderr
    newer = _newer_release(site, installed, "0.1.1")

    upgrade = site.playbook("site.yml", "-e", f"appliance_bundle_dir={newer}")
    (site.root / "upgrade-run.txt").write_text(upgrade.stdout)
    upgraded = recap(upgrade)
    assert upgraded["failed"] == 0
    current = site.installed("opt", "appliance", "current")
    assert os.readlink(current) == "releases/0.1.1"
    assert site.installed("opt", "appliance", "releases", "0.1.0", "venv").is_dir()
    backups = list(site.installed("var", "backups", "appliance").glob("appliance-backup-*.tar.gz"))
    assert len(backups) == 1  # made by the old release before the switch
    after = site.operator("appliance", "docs", "list", "--json")
    assert json.loads(after.stdout) == documents
    # The stores were rebuilt in the new layout (the role's closing doctor found them
    # holding every chunk of the catalog, or the run would have failed).
    data = site.installed("var", "lib", "appliance")
    assert (data / f"lexical-v{NEWER_LAYOUT}").is_dir()
    assert task_outcome(upgrade.stdout, "The stores are rebuilt from the catalog") == "changed"
    assert json.loads(site.operator("appliance", "version", "--json").stdout)["version"] == "0.1.1"
    assert site.operator("audit", "verify").returncode == 0

    refused = site.playbook("rollback.yml", "-e", "appliance_rollback_to=0.0.9")
    assert refused.returncode != 0 and "is not installed" in refused.stdout
    rollback = site.playbook("rollback.yml", "-e", "appliance_rollback_to=0.1.0")
    rolled = recap(rollback)
    assert task_outcome(rollback.stdout, "The stores are rebuilt in the earlier") == "changed"
    assert rolled["failed"] == 0
    assert os.readlink(current) == "releases/0.1.0"
    back = site.operator("appliance", "docs", "list", "--json")
    assert json.loads(back.stdout) == documents
    assert site.operator("audit", "verify").returncode == 0


def _newer_release(site: Site, installed: Path, version: str) -> Path:
    """A bundle of this checkout with the version raised, reusing the first bundle's
    dependency wheels (as a release that changed only the appliance would)."""
    source = site.root / f"source-{version}"
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        if (PROJECT_ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT_ROOT / name, source / name)
    project = source / "pyproject.toml"
    project.write_text(project.read_text().replace('version = "0.1.0"', f'version = "{version}"'))
    # The newer release keeps its stores in another layout: the upgrade must rebuild them.
    layout = source / "appliance" / "index" / "base.py"
    layout.write_text(
        layout.read_text().replace(
            f'STORE_LAYOUT_VERSION = "{STORE_LAYOUT_VERSION}"',
            f'STORE_LAYOUT_VERSION = "{NEWER_LAYOUT}"',
        )
    )
    bundle = site.root / f"bundle-{version}"
    built = subprocess.run(
        [sys.executable, "-m", "appliance.cli", "bundle", "build", str(bundle),
         "--key", str(site.key), "--extras", "", "--server-cache", str(SERVER_CACHE),
         "--wheels-from", str(installed / "wheels")],
        cwd=source, env={**os.environ, "PYTHONPATH": str(source)},
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert json.loads((bundle / "MANIFEST.json").read_text())["appliance_version"] == version
    return bundle


def _load_documents_and_accounts(site: Site) -> None:
    access = site.installed("var", "lib", "appliance", "access")
    subprocess.run(["sudo", "-u", SERVICE_USER, "mkdir", "-p", str(access)], check=True)
    subprocess.run(
        ["sudo", "-u", SERVICE_USER, "cp", str(SAMPLE_SUBJECTS), str(access / "subjects.toml")],
        check=True,
    )  # fmt: skip
    corpus = site.root / "corpus"
    if not corpus.exists():
        shutil.copytree(SAMPLE_CORPUS, corpus)
        # The tests' process may run under the appliance's private umask: the service
        # user reads these as an operator's documents folder.
        for folder, _dirs, files in os.walk(corpus):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
    ingested = site.operator("appliance", "ingest", str(corpus))
    assert ingested.returncode == 0, ingested.stdout[-2000:] + ingested.stderr[-2000:]
    password = site.operator(
        "appliance-web", "accounts", "set-password", "dr-okafor", input=f"{PASSWORD}\n{PASSWORD}\n"
    )
    assert password.returncode == 0, password.stdout + password.stderr


class _Unit:
    """The parts of a systemd unit file the smoke test runs by hand."""

    def __init__(self, path: Path) -> None:
        self.environment: list[str] = []
        self.command: list[str] = []
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "Environment":
                self.environment.extend(shlex.split(value))
            elif key == "ExecStart":
                self.command = shlex.split(value)
            elif key == "User":
                self.user = value
            elif key == "WorkingDirectory":
                self.directory = value


class _running_service:
    """The web service, started as its unit would start it."""

    def __init__(self, site: Site) -> None:
        self.unit = _Unit(site.installed("etc", "systemd", "system", "appliance-web.service"))
        self.site = site
        self.log = site.root / "service.log"

    def __enter__(self) -> subprocess.Popen[str]:
        unit = self.unit
        self.process = subprocess.Popen(
            ["sudo", "-u", unit.user, "env", *unit.environment,
             f"HOME={unit.directory}", *unit.command],
            cwd=unit.directory, stdout=subprocess.DEVNULL, stderr=self.log.open("w"), text=True,
            start_new_session=True,
        )  # fmt: skip
        ready = f"http://127.0.0.1:{self.site.web_port}/ready"
        wait_until_answers(ready, attempts=1500)
        if httpx.get(ready, timeout=5).status_code != 200:
            self.__exit__()
            raise AssertionError(f"the installed service never got ready: {self._log()}")
        return self.process

    def _log(self) -> str:
        return self.log.read_text()[-3000:]

    def __exit__(self, *_exc: object) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class _running_proxy:
    """nginx with the installed site configuration inside a minimal main file."""

    def __init__(self, site: Site) -> None:
        self.folder = site.root / "nginx"
        self.folder.mkdir(exist_ok=True)
        main = self.folder / "nginx.conf"
        site_conf = site.installed("etc", "nginx", "conf.d", "appliance.conf")
        main.write_text(
            f"pid {self.folder}/nginx.pid;\nerror_log {self.folder}/error.log;\n"
            "events { worker_connections 64; }\n"
            f"http {{\n  access_log off;\n  client_body_temp_path {self.folder}/body;\n"
            f"  proxy_temp_path {self.folder}/proxy;\n  include {site_conf};\n}}\n"
        )
        self.main = main
        self.port = site.proxy_port

    def __enter__(self) -> subprocess.Popen[str]:
        checked = subprocess.run(["nginx", "-t", "-c", str(self.main)], capture_output=True,
                                 text=True)  # fmt: skip
        assert checked.returncode == 0, checked.stderr
        self.process = subprocess.Popen(
            ["nginx", "-c", str(self.main), "-g", "daemon off;"], stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self.process
            time.sleep(0.1)
        raise AssertionError(f"nginx did not listen on {self.port}")

    def __exit__(self, *_exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA standing in for the hospital's, and a certificate it issued for localhost."""
    folder.mkdir(parents=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test hospital CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = folder / "ca.crt", folder / "appliance.crt", folder / "appliance.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths
