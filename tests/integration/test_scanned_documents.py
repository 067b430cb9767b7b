"""A scanned PDF on the real appliance: read by Tesseract at ingestion, each page's
confidence kept with the document, and carried to the answer that cites it."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.ingest.ocr import ocr_available
from tests.conftest import SAMPLE_READER, scanned_pdf

pytestmark = pytest.mark.skipif(
    not ocr_available(), reason="needs Debian's tesseract-ocr (.ci/run installs it)"
)


def test_a_scan_is_answered_from_with_its_ocr_confidence(
    sample_appliance: Appliance, tmp_path: Path
) -> None:
    scan = tmp_path / "linen-scan.pdf"
    scan.write_bytes(scanned_pdf([
        "Soiled Linen Procedure", "",
        "Place soiled linen in a red alginate bag at the bedside.",
        "Never carry soiled linen against your uniform.",
    ]))  # fmt: skip
    (tmp_path / "linen-scan.pdf.meta.yaml").write_text(
        "doc_id: soiled-linen-scan\nsensitivity: internal\ndepartments: [all]\nversion: 1\n",
        encoding="utf-8",
    )
    try:
        report = sample_appliance.ingestor.ingest([scan])
        assert not report.failed, report.failed
        record = sample_appliance.catalog.document("soiled-linen-scan")
        assert record is not None and record.metadata.title == "Soiled Linen Procedure"
        assert record.metadata.ocr_confidence[1] > 80
        answer = sample_appliance.answers.ask(
            "Where should soiled linen be placed at the bedside?", SAMPLE_READER
        )
        spans = [span for s in answer.sentences for span in s.spans]
        scanned = [s for s in spans if s.doc_id == "soiled-linen-scan"]
        assert scanned, [s.to_dict() for s in answer.sentences]
        cited = scanned[0].to_dict()
        assert cited["page"] == 1 and cited["scan_confidence"] > 80
        assert cited["scan_check"] is False
        assert "red alginate bag" in cited["quote"]
    finally:
        sample_appliance.ingestor.remove(["soiled-linen-scan"])
