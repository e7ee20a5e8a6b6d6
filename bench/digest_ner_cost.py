"""Why the digest types entities with a heuristic and not a NER library: CPU per article of spaCy's small
CNN NER (the architecture of en_core_web_sm's `ner`, untrained: a forward pass costs the same whatever
the weights) beside the heuristic (modules/digest/dedup/entities.py), on the leads intake reads (title +
300 words) of 1,000 corpus entries. spaCy is no dependency of the project: install it into a throwaway
venv and point `--spacy-python` at it.

    .venv/bin/python bench/digest_ner_cost.py [--spacy-python /tmp/spacy/bin/python] [--articles 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import digest_data  # noqa: E402
from modules.digest.dedup import entities  # noqa: E402
from modules.digest.dedup.features import entity_text  # noqa: E402

SPACY = """
import json, sys, time
from spacy.lang.en import English
texts = json.load(open(sys.argv[1]))
nlp = English()
ner = nlp.add_pipe("ner")
for label in ("PERSON", "ORG", "GPE", "LOC"):
    ner.add_label(label)
nlp.initialize()
for t in texts[:20]:
    nlp(t)
t0 = time.process_time()
for _ in nlp.pipe(texts, batch_size=50):
    pass
print(json.dumps({"cpu_ms_per_article": round(1000 * (time.process_time() - t0) / len(texts), 2)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spacy-python", default=None, help="a Python with spaCy installed")
    parser.add_argument("--articles", type=int, default=1000)
    args = parser.parse_args()
    leads = [entity_text(t, b) for _, t, _, b in digest_data.real_entries()[: args.articles]]
    t0 = time.process_time()
    for lead in leads:
        entities.extract_typed(lead)
    result: dict[str, object] = {
        "articles": len(leads),
        "heuristic_cpu_ms_per_article": round(1000 * (time.process_time() - t0) / len(leads), 3),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if args.spacy_python:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(leads, fh)
        done = subprocess.run(
            [args.spacy_python, "-c", SPACY, fh.name], capture_output=True, text=True, check=True
        )
        result["spacy_ner_cpu_ms_per_article"] = json.loads(done.stdout)["cpu_ms_per_article"]
        os.unlink(fh.name)
    digest_data.report("digest_ner_cost", result)


if __name__ == "__main__":
    main()
