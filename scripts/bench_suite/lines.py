"""Tasks added to the suite, batch text work on lines and words: sort, dedupe, reverse and the last lines; word counts
and frequencies; lines filtered. Each checker's expectation is computed here from the task's own inputs."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from bench_suite.checks import any_of, exact_lines, nonblank_lines, number, word_counts
from bench_suite.task import Task, read, write

# -- sort, dedupe, reverse, last lines -----------------------------------------------------------------------------

PLAYLIST = "Blue in Green\nSo What\nNaima\nTake Five\nAutumn Leaves\nRound Midnight\n"
SERVER_LOG = (
    "08:00:01 server started on port 8080\n08:02:13 GET / 200\n08:02:14 GET /style.css 200\n"
    "08:05:40 POST /login 302\n08:05:41 GET /dashboard 200\n08:09:59 GET /report.pdf 404\n"
    "08:10:00 server stopping\n"
)
CITIES = "Porto\nLyon\nGhent\nPorto\nAarhus\nLyon\nBologna\nGhent\nPorto\n"
LEADERBOARD = "ana 420\nbo 1050\ncyril 97\ndeniz 310\neve 2200\nfarah 55\n"


def _by_score(text: str) -> list[str]:
    return sorted(nonblank_lines(text), key=lambda line: int(line.split()[1]), reverse=True)


# -- word counts and frequencies -----------------------------------------------------------------------------------

SPEECH = (
    "Friends, thank you for coming tonight.\nTen years ago we opened this library with three shelves and a\n"
    "borrowed kettle. Today it lends eleven thousand books a year, runs a repair cafe on Saturdays\n"
    "and teaches forty children to code. None of it happened without you.\n"
)
REVIEW = (
    "The coffee here is strong and the coffee is cheap.\nStaff are kind, prices are fair, and the cake is fresh.\n"
    "I come back for the coffee every week: good coffee, good cake, kind people.\nIf you like coffee, go.\n"
)
ESSAY = (
    "Data is only as good as the questions we ask of it. Most teams collect data first and ask later,\n"
    "so their database fills with metadata nobody reads. Better: decide what decision the data should\n"
    "inform, then gather that data, and delete what you keep only out of habit. DATA without a purpose is a cost.\n"
)


def _top(text: str, n: int) -> list[tuple[str, int]]:
    return Counter(re.findall(r"[a-z']+", text.lower())).most_common(n)


def _solve_top(ws: Path) -> None:
    counts: dict[str, int] = {}
    for word in read(ws, "data/review.txt").lower().split():
        word = word.strip(".,:;!?")
        counts[word] = counts.get(word, 0) + 1
    best = sorted(counts.items(), key=lambda item: -item[1])[:3]
    write(ws, "out/top3.txt", "".join(f"{word} {count}\n" for word, count in best))


# -- lines filtered ------------------------------------------------------------------------------------------------

SERVICE_LOG = (
    "2026-03-04 09:00:00 INFO worker started\n2026-03-04 09:00:02 DEBUG loaded 14 jobs\n"
    "2026-03-04 09:01:10 WARN job 7 took 48 s\n2026-03-04 09:02:00 INFO job 8 done\n"
    "2026-03-04 09:03:31 ERROR job 9 failed: no such file report.csv\n2026-03-04 09:04:00 INFO job 10 done\n"
    "2026-03-04 09:05:12 WARN queue above 100\n2026-03-04 09:06:45 ERROR lost connection to redis\n"
)
TODO = (
    "[x] book the flights\n[ ] renew the passport\n[x] ask Lea about the cat\n[ ] buy a travel adapter\n"
    "[ ] print the tickets\n[x] pay the deposit\n"
)
ACCESS = (
    '10.0.0.5 - - [04/Mar/2026:10:00:01] "GET /home HTTP/1.1" 200\n'
    '10.0.0.9 - - [04/Mar/2026:10:00:03] "GET /login HTTP/1.1" 200\n'
    '10.0.0.9 - - [04/Mar/2026:10:00:07] "POST /login HTTP/1.1" 302\n'
    '10.0.0.5 - - [04/Mar/2026:10:01:15] "GET /cart HTTP/1.1" 200\n'
    '10.0.0.7 - - [04/Mar/2026:10:02:40] "GET /login?next=/cart HTTP/1.1" 200\n'
    '10.0.0.9 - - [04/Mar/2026:10:05:00] "GET /logout HTTP/1.1" 302\n'
)
OPEN_TODOS = [line for line in nonblank_lines(TODO) if not line.startswith("[x]")]

LINES: list[Task] = [
    # -- sort, dedupe, reverse, last lines
    Task("lines_reverse", "text",
         "Reverse the order of the lines in data/playlist.txt and save the result as out/reversed.txt",
         {"data/playlist.txt": PLAYLIST}, exact_lines("out/reversed.txt", nonblank_lines(PLAYLIST)[::-1]),
         kind="line_ops",
         solve=lambda ws: write(ws, "out/reversed.txt",
                                "\n".join(reversed(read(ws, "data/playlist.txt").splitlines())))),
    Task("lines_last_two", "text", "Write the last 2 lines of data/server.log to out/tail.txt",
         {"data/server.log": SERVER_LOG}, exact_lines("out/tail.txt", nonblank_lines(SERVER_LOG)[-2:]),
         kind="line_ops",
         solve=lambda ws: write(ws, "out/tail.txt", "".join(read(ws, "data/server.log").splitlines(True)[-2:]))),
    Task("lines_unique_sorted", "text",
         "Give me the distinct city names in data/cities.txt, sorted A to Z, one per line, in out/cities.txt",
         {"data/cities.txt": CITIES}, exact_lines("out/cities.txt", sorted(set(nonblank_lines(CITIES)))),
         kind="line_ops",
         solve=lambda ws: write(ws, "out/cities.txt", "\n".join(sorted(set(read(ws, "data/cities.txt").split()))))),
    Task("lines_sort_by_number", "text",
         "Sort the lines of data/leaderboard.txt by their score, highest first, and save them in out/ranked.txt",
         {"data/leaderboard.txt": LEADERBOARD}, exact_lines("out/ranked.txt", _by_score(LEADERBOARD)),
         kind="line_ops",
         solve=lambda ws: write(ws, "out/ranked.txt", "eve 2200\nbo 1050\nana 420\ndeniz 310\ncyril 97\nfarah 55\n")),
    # -- word counts and frequencies
    Task("words_in_speech", "text", "How many words does data/speech.txt contain? Write only the number to "
         "out/wordcount.txt", {"data/speech.txt": SPEECH}, number("out/wordcount.txt", len(SPEECH.split())),
         kind="word_freq",
         solve=lambda ws: write(ws, "out/wordcount.txt", str(len(read(ws, "data/speech.txt").split())))),
    Task("words_top_three", "text",
         "Write the 3 most frequent words of data/review.txt, ignoring case and punctuation, to out/top3.txt as "
         "'word count' lines, most frequent first", {"data/review.txt": REVIEW},
         word_counts("out/top3.txt", _top(REVIEW, 3)), kind="word_freq", solve=_solve_top),
    Task("words_one_word", "text",
         "How often does the word 'data' appear in notes/essay.txt, in any case? Put the count in out/data_count.txt",
         {"notes/essay.txt": ESSAY}, number("out/data_count.txt", len(re.findall(r"\bdata\b", ESSAY, re.IGNORECASE))),
         kind="word_freq",
         solve=lambda ws: write(ws, "out/data_count.txt", str(sum(
             w.strip(".,:").lower() == "data" for w in read(ws, "notes/essay.txt").split())))),
    # -- lines filtered
    Task("filter_error_or_warn", "text",
         "Keep only the lines of data/service.log that contain ERROR or WARN, and save them as out/problems.log",
         {"data/service.log": SERVICE_LOG},
         exact_lines("out/problems.log", [ln for ln in nonblank_lines(SERVICE_LOG) if "ERROR" in ln or "WARN" in ln]),
         kind="filter_lines",
         solve=lambda ws: write(ws, "out/problems.log", "".join(
             ln for ln in read(ws, "data/service.log").splitlines(True) if " ERROR " in ln or " WARN " in ln))),
    Task("filter_open_todos", "text",
         "Which items in data/todo.txt are not done yet? The done ones start with [x]. Write the others to "
         "out/open.txt", {"data/todo.txt": TODO},
         any_of(exact_lines("out/open.txt", OPEN_TODOS),
                exact_lines("out/open.txt", [line.removeprefix("[ ]").strip() for line in OPEN_TODOS])),
         kind="filter_lines",
         solve=lambda ws: write(ws, "out/open.txt", "".join(
             ln[4:] for ln in read(ws, "data/todo.txt").splitlines(True) if ln.startswith("[ ]")))),
    Task("filter_login_lines", "text", "Put every line of data/access.log that mentions /login in out/login.txt",
         {"data/access.log": ACCESS},
         exact_lines("out/login.txt", [line for line in nonblank_lines(ACCESS) if "/login" in line]),
         kind="filter_lines",
         solve=lambda ws: write(ws, "out/login.txt", "".join(
             ln for ln in read(ws, "data/access.log").splitlines(True) if "/login " in ln or "/login?" in ln))),
]  # fmt: skip
