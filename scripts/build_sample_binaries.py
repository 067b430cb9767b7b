"""Writes the sample corpus's PDF and DOCX documents from the content below.

The generated files are committed; run this only to change them:
``.venv/bin/python scripts/build_sample_binaries.py`` (needs the ``test`` extra for fpdf2).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import docx
from fpdf import FPDF

OUT = Path(__file__).resolve().parent.parent / "appliance" / "sample_corpus" / "documents"
NOTICE = "FICTIONAL DOCUMENT for demonstration only. Northfield General Hospital does not exist."

FORMULARY = [
    ("h1", "Adult Antimicrobial Dosing Formulary"),
    ("p", NOTICE),
    ("h2", "1. How to use this formulary"),
    (
        "p",
        "Doses are for adults with normal renal function unless a renal column is given. "
        "Creatinine clearance (CrCl) is estimated with the Cockcroft-Gault equation using actual body weight.",
    ),
    ("h2", "2. Beta-lactams"),
    (
        "table",
        [
            ["Drug", "Usual dose", "CrCl 10-50 mL/min", "CrCl below 10 mL/min"],
            [
                "Piperacillin-tazobactam",
                "4.5 g IV every 8 hours",
                "4.5 g IV every 12 hours",
                "4.5 g IV every 12 hours",
            ],
            [
                "Meropenem",
                "1 g IV every 8 hours",
                "1 g IV every 12 hours",
                "500 mg IV every 24 hours",
            ],
            ["Ceftriaxone", "2 g IV every 24 hours", "no change", "no change"],
            [
                "Aztreonam",
                "2 g IV every 8 hours",
                "1 g IV every 8 hours",
                "500 mg IV every 8 hours",
            ],
            [
                "Co-amoxiclav",
                "1.2 g IV every 8 hours",
                "1.2 g IV every 12 hours",
                "1.2 g IV then 600 mg every 12 hours",
            ],
        ],
    ),
    ("h2", "3. Glycopeptides"),
    (
        "p",
        "Vancomycin loading dose is 25 mg/kg IV (maximum 2 g), then 15 mg/kg every 12 hours. "
        "Take a trough level before the fourth dose; the target trough is 15 to 20 mg/L for severe infection.",
    ),
    (
        "table",
        [
            ["Drug", "Loading dose", "Maintenance", "Monitoring"],
            [
                "Vancomycin",
                "25 mg/kg IV, max 2 g",
                "15 mg/kg IV every 12 hours",
                "Trough before 4th dose, target 15-20 mg/L",
            ],
            [
                "Teicoplanin",
                "6 mg/kg IV every 12 hours for 3 doses",
                "6 mg/kg IV every 24 hours",
                "Trough on day 5, target above 15 mg/L",
            ],
        ],
    ),
    ("h2", "4. Aminoglycosides"),
    (
        "p",
        "Gentamicin is given once daily at 5 mg/kg using ideal body weight, maximum 500 mg. "
        "Take a level 6 to 14 hours after the first dose and read it against the Hartford nomogram. "
        "Do not give gentamicin for more than 72 hours without microbiology advice.",
    ),
    ("h2", "5. Restricted antimicrobials"),
    (
        "p",
        "Meropenem, linezolid, daptomycin and all antifungals other than fluconazole need approval "
        "from a consultant microbiologist before the second dose.",
    ),
]

PAEDIATRIC = [
    ("h1", "Paediatric Emergency Drug Chart"),
    ("p", NOTICE),
    ("h2", "Estimating weight"),
    (
        "p",
        "Use a measured weight whenever possible. If the child cannot be weighed, estimate weight in kg "
        "as (age in years + 4) x 2 for children aged 1 to 10 years.",
    ),
    ("h2", "Resuscitation drugs"),
    (
        "table",
        [
            ["Drug", "Dose", "Maximum", "Route"],
            [
                "Adrenaline (cardiac arrest)",
                "10 micrograms/kg (0.1 mL/kg of 1 in 10,000)",
                "1 mg",
                "IV or IO",
            ],
            ["Adrenaline (anaphylaxis)", "10 micrograms/kg of 1 in 1,000", "500 micrograms", "IM"],
            ["Amiodarone", "5 mg/kg", "300 mg", "IV or IO"],
            ["Glucose 10%", "2 mL/kg", "250 mL", "IV or IO"],
            ["Fluid bolus", "10 mL/kg sodium chloride 0.9%", "500 mL", "IV or IO"],
        ],
    ),
    ("h2", "Seizures"),
    (
        "table",
        [
            ["Step", "Drug and dose", "When"],
            [
                "1",
                "Buccal midazolam 0.3 mg/kg (max 10 mg) or IV lorazepam 0.1 mg/kg (max 4 mg)",
                "At 5 minutes of seizure",
            ],
            ["2", "Repeat IV lorazepam 0.1 mg/kg", "10 minutes after step 1"],
            [
                "3",
                "Levetiracetam 40 mg/kg IV over 5 minutes (max 3 g)",
                "If seizure continues after step 2",
            ],
        ],
    ),
    ("h2", "Analgesia"),
    (
        "p",
        "Paracetamol 15 mg/kg orally every 4 to 6 hours, maximum 4 doses in 24 hours. "
        "Ibuprofen 10 mg/kg orally every 8 hours for children older than 3 months.",
    ),
]


def _pdf(path: Path, title: str, blocks: list[tuple[str, object]]) -> None:
    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_creation_date(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))  # reproducible bytes
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    for kind, content in blocks:
        if kind == "h1":
            pdf.set_font("Helvetica", "B", 18)
            pdf.multi_cell(0, 10, str(content), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "h2":
            pdf.ln(3)
            pdf.set_font("Helvetica", "B", 14)
            pdf.multi_cell(0, 8, str(content), new_x="LMARGIN", new_y="NEXT")
        elif kind == "p":
            pdf.set_font("Helvetica", "", 11)
            pdf.multi_cell(0, 6, str(content), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
        elif kind == "table":
            pdf.set_font("Helvetica", "", 9)
            with pdf.table() as table:
                for row in content:  # type: ignore[attr-defined]
                    cells = table.row()
                    for cell in row:
                        cells.cell(cell)
            pdf.ln(3)
        elif kind == "page":
            pdf.add_page()
    pdf.output(str(path))


def _docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Delirium Screening and Management"
    document.add_heading("Delirium Screening and Management", level=1)
    document.add_paragraph(NOTICE)
    document.add_heading("Screening", level=2)
    document.add_paragraph(
        "Screen every patient aged 65 or over with the 4AT test within 24 hours of admission and "
        "whenever their behaviour changes. A 4AT score of 4 or more suggests delirium."
    )
    document.add_heading("Causes to look for", level=2)
    for cause in (
        "Infection, especially urinary and chest infection.",
        "Medicines, especially anticholinergics, opioids and benzodiazepines.",
        "Urinary retention and constipation.",
        "Dehydration, hyponatraemia and hypoglycaemia.",
    ):
        document.add_paragraph(cause, style="List Bullet")
    document.add_heading("Management", level=2)
    document.add_paragraph(
        "Treat the cause. Reorientate the patient, keep glasses and hearing aids in place and "
        "promote normal sleep. Avoid moving the patient between wards."
    )
    document.add_paragraph(
        "Antipsychotics are used only when the patient is severely distressed or at risk of harm: "
        "haloperidol 0.5 mg orally, maximum 2 mg in 24 hours. Haloperidol is avoided in Parkinson's "
        "disease and Lewy body dementia."
    )
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "4AT item"
    table.rows[0].cells[1].text = "Score"
    for item, score in (
        ("Alertness", "0 or 4"),
        ("AMT4", "0, 1 or 2"),
        ("Attention (months backwards)", "0, 1 or 2"),
        ("Acute change or fluctuating course", "0 or 4"),
    ):
        cells = table.add_row().cells
        cells[0].text = item
        cells[1].text = score
    document.core_properties.created = dt.datetime(2024, 1, 1)
    document.save(str(path))


if __name__ == "__main__":
    _pdf(OUT / "antimicrobial-formulary.pdf", "Adult Antimicrobial Dosing Formulary", FORMULARY)
    _pdf(OUT / "paediatric-emergency-drugs.pdf", "Paediatric Emergency Drug Chart", PAEDIATRIC)
    _docx(OUT / "delirium-screening.docx")
    print(f"wrote PDF and DOCX documents to {OUT}")
