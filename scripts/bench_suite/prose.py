"""Tasks added to the suite, file summaries and prose: summaries, a short email, a haiku, a reply, questions about a
file answered into a file. Prose is judged by its shape and what it must name; an answer by what the file says."""

from __future__ import annotations

import configparser
import csv
import io
import json
import re

from bench_suite.checks import answer, bullets, one_line, prose
from bench_suite.task import Task, write

# -- summaries -----------------------------------------------------------------------------------------------------

MINUTES = (
    "Board meeting, 2 April 2026. Present: Ruth, Karim, Ilse, Tomasz.\n"
    "1. The spring fair moves from the park to the school hall because of the building work.\n"
    "2. Karim reported 4,180 EUR in the bank after paying the printer.\n"
    "3. The club will apply for the city's youth sports grant; Ilse writes the application by 30 April.\n"
    "4. Membership fees stay at 35 EUR a year.\n"
    "5. Tomasz steps down as secretary in June; nominations open now.\n"
)
REVIEW = (
    "I bought the Trailmate 2 tent for a week in the Pyrenees. It went up in ten minutes and stayed dry through two\n"
    "nights of heavy rain. The pegs bent on rocky ground and the zip caught often. At 1.9 kg it is light for a\n"
    "two-person tent, but the inside is cramped for tall people. Good value at its price.\n"
)
BACKUP_GUIDE = (
    "# Backups\n\nEvery night at 02:00 the server copies /srv/data to the backup disk with restic.\n"
    "Snapshots are kept for 7 days, then one a week for 8 weeks.\n\n## Restoring a file\n\n"
    "Run `restic restore latest --target /tmp/restore --include PATH` and copy the file back by hand.\n\n"
    "## When it fails\n\nThe job mails ops@example.org. Check the disk is mounted, then run the job again.\n"
)

# -- prose ---------------------------------------------------------------------------------------------------------

COMPLAINT = (
    "Hello,\n\nI ordered a blue kettle (order #48213) on 2 March. It arrived on 11 March with a cracked lid, and\n"
    "nobody has answered my two emails since. I would like a replacement or my money back.\n\nRegards,\nHelga Brandt\n"
)
ORDER = re.search(r"#(\d+)", COMPLAINT)

# -- questions about a file ----------------------------------------------------------------------------------------

SERVER_INI = (
    "[server]\nhost = 0.0.0.0\nport = 8443\nworkers = 4\n\n[database]\nhost = db.internal\nport = 5432\n"
    "name = shop\n\n[mail]\nport = 587\n"
)
RESULTS = "runner,minutes\nAyla,41.5\nBruno,38.2\nChidi,44.0\nDana,36.9\nEmre,39.4\n"
SETTINGS = json.dumps({"app": "ledger", "logging": {"level": "info", "debug": True}, "cache": {"enabled": False}})


def _ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read_string(text)
    return parser


def _fastest(text: str) -> str:
    return min(csv.DictReader(io.StringIO(text)), key=lambda row: float(row["minutes"]))["runner"]


PROSE: list[Task] = [
    # -- summaries
    Task("summary_minutes_4", "summary",
         "Give me 4 bullet points summarising data/minutes.txt, saved as out/minutes.md",
         {"data/minutes.txt": MINUTES}, bullets("out/minutes.md", 4),
         kind="summary",
         solve=lambda ws: write(ws, "out/minutes.md", "- Fair moves to the school hall\n- 4,180 EUR in the bank\n"
                                "- Ilse writes the grant application\n- Fees stay at 35 EUR\n")),
    Task("summary_one_sentence", "summary",
         "Could you sum up data/review.txt in one sentence of at most 25 words? Put it in out/tldr.txt",
         {"data/review.txt": REVIEW}, one_line("out/tldr.txt", max_words=25),
         kind="summary",
         solve=lambda ws: write(ws, "out/tldr.txt", "A light, quick, rainproof tent with weak pegs and zip, cramped "
                                "for tall people, but good value.\n")),
    Task("summary_guide_backup", "summary", "out/guide.md should hold a 3-bullet summary of docs/backup-guide.md",
         {"docs/backup-guide.md": BACKUP_GUIDE}, bullets("out/guide.md", 3, mention="backup"),
         kind="summary",
         solve=lambda ws: write(ws, "out/guide.md", "* Nightly restic backup of /srv/data at 02:00\n"
                                "* Restore with restic restore\n* Failures mail ops\n")),
    # -- prose
    Task("prose_email", "summary",
         "Write a short email to Sam (under 80 words) asking to move Friday's meeting to Monday. Save it as "
         "out/email.txt", {},
         prose("out/email.txt", lines=(2, 20), words=(15, 79), mentions=["Sam", "Friday", "Monday"]),
         kind="prose",
         solve=lambda ws: write(ws, "out/email.txt", "Subject: Moving Friday's meeting\n\nHi Sam,\n\nCould we move "
                                "our Friday meeting to Monday? Same time works for me.\n\nThanks,\nAlex\n")),
    Task("prose_haiku", "summary", "A haiku about autumn rain, please, in out/haiku.txt", {},
         prose("out/haiku.txt", lines=(3, 3), words=(5, 25), mentions=["rain"]),
         kind="prose",
         solve=lambda ws: write(ws, "out/haiku.txt", "Cold rain on the roof\nred leaves sink in the gutter\n"
                                "the kettle murmurs\n")),
    Task("prose_reply", "summary",
         "Draft a polite reply of at most 60 words to the customer complaint in data/complaint.txt and put it in "
         "out/reply.txt", {"data/complaint.txt": COMPLAINT},
         prose("out/reply.txt", words=(10, 60), mentions=["Helga|Ms Brandt|Mrs Brandt", ORDER[1] if ORDER else "#"]),
         kind="prose",
         solve=lambda ws: write(ws, "out/reply.txt", "Dear Helga,\n\nWe are sorry your kettle (order 48213) arrived "
                                "cracked and that we were slow to answer. A replacement ships today.\n\nBest wishes,\n"
                                "The Shop\n")),
    # -- questions about a file
    Task("question_port", "summary",
         "Which port does the server in config/server.ini listen on? Write just the number to out/port.txt",
         {"config/server.ini": SERVER_INI}, answer("out/port.txt", _ini(SERVER_INI)["server"]["port"]),
         kind="question", solve=lambda ws: write(ws, "out/port.txt", "8443\n")),
    Task("question_fastest", "summary",
         "Who ran fastest according to data/results.csv (the minutes column)? Answer with the name only in "
         "out/winner.txt", {"data/results.csv": RESULTS}, answer("out/winner.txt", _fastest(RESULTS)),
         kind="question", solve=lambda ws: write(ws, "out/winner.txt", "Dana")),
    Task("question_debug", "summary",
         "Is debug logging turned on in config/settings.json? Answer yes or no in out/answer.txt",
         {"config/settings.json": SETTINGS},
         answer("out/answer.txt", "yes" if json.loads(SETTINGS)["logging"]["debug"] else "no"),
         kind="question", solve=lambda ws: write(ws, "out/answer.txt", "Yes.\n")),
]  # fmt: skip
