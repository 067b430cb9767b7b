"""Nothing leaks, over generated users, documents, labels and policies.

A corpus of documents with random ACL labels is ingested once into the real stores
(tantivy, qdrant-edge) through the real ingestion pipeline. Hypothesis then generates
policies, subjects, questions and a revocation; each case runs the real query pipeline
and the answer-time check, and compares them with an oracle written here, from the
policy's definition, independently of the product's code:

- every returned chunk is permitted, and the engines' filter agrees with the enforcer
  (nothing was screened out afterwards);
- the compiled filter selects exactly the permitted chunks of the whole corpus, and the
  enforcer permits exactly those;
- a user who may read few chunks still gets k results when k exist;
- after a revocation between retrieval and answer, exactly the citations still
  permitted survive, and a claim left without citations is dropped.

10,000 cases with APPLIANCE_SLOW_TESTS=1; a smaller run by default.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from appliance.access.filter_compiler import MATCH_NOTHING
from appliance.access.rules import Resource, Subject
from appliance.engines import Appliance
from appliance.records import SENSITIVITIES, AnswerSentence, Chunk, Citation
from tests.conftest import SLOW, make_settings

DEPARTMENTS = ("cardiology", "icu", "pharmacy")
LABEL_DEPARTMENTS = (*DEPARTMENTS, "all")
ROLES = ("r1", "r2", "r3")
USERS = ("u1", "u2", "u3")
PATIENTS = ("P-1", "P-2", "P-3")
GRANTED_PATIENT = PATIENTS[0]
"""The patient every generated emergency grant names: it opens that patient's records only."""
OWNERS = ("cardiology", "pharmacy", "u1", "u2")
WORDS = [
    "sepsis",
    "insulin",
    "heparin",
    "warfarin",
    "fever",
    "stroke",
    "fluid",
    "oxygen",
    "catheter",
    "allergy",
    "dose",
    "infusion",
    "bleeding",
    "screening",
    "delirium",
    "falls",
    "wound",
    "transfusion",
    "isolation",
    "discharge",
]
CASES = 10_000 if SLOW else 300


@dataclass(frozen=True)
class Labels:
    departments: tuple[str, ...]
    sensitivity: str
    owner: str
    patient_id: str


def _write_corpus(folder: Path, seed: int = 7, documents: int = 70) -> None:
    rng = random.Random(seed)
    for n in range(documents):
        departments = rng.sample(LABEL_DEPARTMENTS, rng.randint(0, 2))
        patient = rng.choice((None, None, *PATIENTS))
        front = [
            f"doc_id: gen-{n:03d}",
            f"title: Generated document {n}",
            f"departments: [{', '.join(departments)}]",
            f"sensitivity: {rng.choice(SENSITIVITIES)}",
            f"owner: {rng.choice(OWNERS)}",
        ]
        if patient:
            front.append(f"patient_id: {patient}")
        sections = []
        for s in range(rng.randint(1, 3)):
            words = " ".join(rng.choices(WORDS, k=10))
            sections.append(f"## Section {s}\n\nThis section is about {words}.\n")
        body = "---\n" + "\n".join(front) + "\n---\n# Generated document\n\n" + "\n".join(sections)
        (folder / f"gen-{n:03d}.md").write_text(body, encoding="utf-8")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Appliance]:
    root = tmp_path_factory.mktemp("access-property")
    corpus = root / "corpus"
    corpus.mkdir()
    _write_corpus(corpus)
    appliance = Appliance(make_settings(root / "data", rerank={"cage": False}))
    report = appliance.ingestor.ingest([corpus])
    assert not report.failed
    yield appliance
    appliance.close()


def _all_chunks(appliance: Appliance) -> dict[str, Chunk]:
    ids = [
        i for r in appliance.catalog.documents() for i in appliance.catalog.chunk_ids_of(r.doc_id)
    ]
    return appliance.catalog.chunks(ids)


# -- the oracle: the policy's definition, written independently of appliance.access --------


def _oracle(
    rules: list[tuple[str, ...]],
    inherits: list[tuple[str, str]],
    subject: Subject,
    breaking_glass: bool,
    labels: Labels,
    action: str,
) -> bool:
    principals = {f"user:{subject.user_id}"} | {f"role:{r}" for r in subject.roles}
    if breaking_glass:
        principals.add("role:break-glass")
    grown = True
    while grown:
        parents = {f"role:{parent}" for child, parent in inherits if f"role:{child}" in principals}
        grown = not parents <= principals
        principals |= parents
    team = (*subject.care_team, *((GRANTED_PATIENT,) if breaking_glass else ()))
    if labels.patient_id and labels.patient_id not in team:
        return False
    effects = set()
    for principal, department, sensitivity, rule_action, effect in rules:
        if rule_action != action or principal not in principals:
            continue
        if sensitivity == "*":
            level_ok = labels.sensitivity != "restricted"
        else:
            level_ok = labels.sensitivity == sensitivity
        if department == "*":
            department_ok = True
        elif department == "own":
            department_ok = bool(set(labels.departments) & {*subject.departments, "all"})
        elif department == "owner":
            department_ok = labels.owner in {subject.user_id, *subject.departments}
        else:
            department_ok = department in labels.departments
        if level_ok and department_ok:
            effects.add(effect)
    return "allow" in effects and "deny" not in effects


def _labels(chunk: Chunk) -> Labels:
    meta = chunk.metadata
    return Labels(meta.departments, meta.sensitivity, meta.owner, meta.patient_id or "")


# -- generated cases ----------------------------------------------------------------------

principals = st.sampled_from(
    [f"role:{r}" for r in ROLES] + [f"user:{u}" for u in USERS] + ["role:break-glass"]
)
chunk_rules = st.tuples(
    principals,
    st.sampled_from(("*", "own", "owner", *DEPARTMENTS, "all")),
    st.sampled_from(("*", *SENSITIVITIES)),
    st.sampled_from(("read", "cite")),
    st.sampled_from(("allow", "allow", "allow", "deny")),
)
inheritance = st.lists(
    st.tuples(st.sampled_from(ROLES[:2]), st.sampled_from(ROLES[1:])).filter(lambda p: p[0] < p[1]),
    max_size=2,
    unique=True,
)
subjects = st.builds(
    Subject,
    user_id=st.sampled_from(USERS),
    roles=st.lists(st.sampled_from(ROLES), max_size=2, unique=True).map(tuple),
    departments=st.lists(st.sampled_from(DEPARTMENTS), max_size=2, unique=True).map(tuple),
    care_team=st.lists(st.sampled_from(PATIENTS), max_size=2, unique=True).map(tuple),
)
questions = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
revocations = st.one_of(
    st.tuples(st.just("remove-rule"), st.integers(min_value=0)),
    st.tuples(st.just("leave-care-team"), st.integers(min_value=0)),
    st.tuples(st.just("end-break-glass"), st.just(0)),
    st.tuples(st.just("nothing"), st.just(0)),
)


def _policy_text(rules: list[tuple[str, ...]], inherits: list[tuple[str, str]]) -> str:
    lines = ["# generated"]
    lines += [", ".join(("p", *rule)) for rule in dict.fromkeys(rules)]
    lines += [f"g, role:{child}, role:{parent}" for child, parent in inherits]
    return "\n".join(lines) + "\n"


def _install_policy(appliance: Appliance, text: str) -> None:
    """Replace the site policy file as an administrator's edit would (atomically)."""
    path = appliance.policy.path
    temporary = path.with_suffix(".new")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


@settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rules=st.lists(chunk_rules, min_size=0, max_size=8),
    inherits=inheritance,
    subject=subjects,
    breaking_glass=st.booleans(),
    question=questions,
    mode=st.sampled_from(("lexical", "dense", "hybrid")),
    top_k=st.integers(min_value=1, max_value=15),
    revocation=revocations,
)
def test_nothing_leaks_and_nothing_permitted_is_lost(
    generated: Appliance,
    rules: list[tuple[str, ...]],
    inherits: list[tuple[str, str]],
    subject: Subject,
    breaking_glass: bool,
    question: str,
    mode: str,
    top_k: int,
    revocation: tuple[str, int],
) -> None:
    appliance = generated
    chunks = _all_chunks(appliance)
    _install_policy(appliance, _policy_text(rules, inherits))
    if breaking_glass:
        appliance.break_glass.grant(
            subject.user_id, "generated emergency access for testing", dt.timedelta(minutes=30),
            GRANTED_PATIENT,
        )  # fmt: skip
    try:
        permitted = {
            i
            for i, c in chunks.items()
            if _oracle(rules, inherits, subject, breaking_glass, _labels(c), "read")
        }
        result = appliance.query.run(question, subject, top_k, None, mode, rerank=False)  # type: ignore[arg-type]
        returned = [c.chunk.chunk_id for c in result.candidates]

        # 1. Everything returned is permitted; the engines' filter never let through
        #    what the enforcer then had to drop.
        assert set(returned) <= permitted
        assert result.screened_out == []
        # A chunk is flagged exactly when only the emergency grant lets the subject read it.
        for candidate in result.candidates:
            labels = _labels(candidate.chunk)
            without = _oracle(rules, inherits, subject, False, labels, "read")
            assert candidate.break_glass == (breaking_glass and not without)

        # 2. The compiled filter selects exactly the permitted chunks of the whole corpus
        #    (dense search with k = corpus size returns everything the filter admits).
        if result.scope.search_filter != MATCH_NOTHING:
            everything = appliance.vectors.search(
                appliance.embedder.embed_query(question), len(chunks), result.scope.search_filter
            )
            assert {hit.chunk_id for hit in everything} == permitted
        else:
            assert permitted == set()

        # 2b. The enforcer, asked about every chunk, agrees with the oracle.
        assert {i for i, c in chunks.items() if result.scope.allows(Resource.of(c))} == permitted

        # 3. Few permitted chunks still fill top-k when k exist.
        if mode == "lexical":
            matching = {
                hit.chunk_id for hit in appliance.lexical.search(question, len(chunks), None)
            }
            assert len(returned) == min(top_k, len(matching & permitted))
        else:
            assert len(returned) == min(top_k, len(permitted))

        # 4. A revocation between retrieval and answer: exactly what is still permitted
        #    (read and cite) survives at answer time.
        kind, which = revocation
        after_rules, after_subject, still_breaking = (
            list(dict.fromkeys(rules)),
            subject,
            breaking_glass,
        )
        if kind == "remove-rule" and after_rules:
            del after_rules[which % len(after_rules)]
            _install_policy(appliance, _policy_text(after_rules, inherits))
        elif kind == "leave-care-team" and subject.care_team:
            team = list(subject.care_team)
            del team[which % len(team)]
            after_subject = replace(subject, care_team=tuple(team))
        elif kind == "end-break-glass" and breaking_glass:
            appliance.break_glass.end(subject.user_id, subject.user_id)
            still_breaking = False
        sentences = [
            AnswerSentence(f"Claim {n}.", "claim", (Citation(chunk_id, "This section"),))
            for n, chunk_id in enumerate(returned)
        ]
        recheck = appliance.guard.recheck_answer(after_subject, sentences, None)
        kept = {c.chunk_id for s in recheck.sentences for c in s.citations}
        expected = {
            chunk_id
            for chunk_id in returned
            if all(
                _oracle(
                    after_rules,
                    inherits,
                    after_subject,
                    still_breaking,
                    _labels(chunks[chunk_id]),
                    a,
                )
                for a in ("read", "cite")
            )
        }
        assert kept == expected
        assert len(recheck.sentences) == len(expected)
        assert {c.citation.chunk_id for c in recheck.dropped_citations} == set(returned) - expected
    finally:
        appliance.break_glass.end(subject.user_id, subject.user_id)
