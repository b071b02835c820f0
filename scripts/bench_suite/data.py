"""Tasks added to the suite, batch text work on data: CSV sums, averages and filters, JSON/YAML/CSV conversions,
emails, URLs and numbers extracted from text. Each checker's expectation is computed here from the task's own
inputs (with the csv, json and yaml modules)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from bench_suite.checks import csv_table, data_file, decimal, exact_lines
from bench_suite.task import Task, read, write


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- CSV sums, averages and filters --------------------------------------------------------------------------------

EXPENSES = (
    'date,description,amount\n2026-01-03,Coffee beans,12.50\n2026-01-05,"Paper, A4, 5 packs",23.95\n'
    "2026-01-09,Train ticket,41.20\n2026-01-12,Printer ink,30.00\n2026-01-20,Lunch with client,58.35\n"
)
SCORES = "student,score\nAmira,78\nBen,91\nChloe,64\nDiego,85\nElif,70\nFinn,88\n"
ORDERS = (
    "order_id,customer,status,total\n5001,Nadia,shipped,34.00\n5002,Omar,pending,12.50\n"
    "5003,Priya,shipped,99.90\n5004,Quentin,cancelled,20.00\n5005,Rosa,shipped,7.25\n5006,Sven,pending,64.10\n"
)
SALES_Q1 = (
    "month,region,units\nJan,west,40\nJan,east,75\nJan,north,20\nFeb,west,55\nFeb,east,60\nFeb,north,35\n"
    "Mar,west,48\nMar,east,81\nMar,north,12\n"
)


def _by_region(text: str) -> list[list[str]]:
    totals: dict[str, int] = defaultdict(int)
    for row in _rows(text):
        totals[row["region"]] += int(row["units"])
    return [[region, str(total)] for region, total in sorted(totals.items())]


def _solve_total(ws: Path) -> None:
    cents = 0
    for line in read(ws, "data/expenses.csv").splitlines()[1:]:
        euros, _, rest = line.rpartition(",")[2].partition(".")
        cents += int(euros) * 100 + int(rest)
    write(ws, "out/total.txt", f"{cents // 100}.{cents % 100:02d}\n")


def _solve_region(ws: Path) -> None:
    totals: dict[str, int] = {}
    for line in read(ws, "data/sales_q1.csv").splitlines()[1:]:
        _, region, units = line.split(",")
        totals[region] = totals.get(region, 0) + int(units)
    write(ws, "out/by_region.csv", "region,total\n" + "".join(f"{r},{totals[r]}\n" for r in sorted(totals)))


# -- conversions ---------------------------------------------------------------------------------------------------

CONTACTS = "name,email,city\nLena Vogel,lena@vogel.example,Berlin\nKofi Mensah,kofi@mensah.example,Accra\n" + (
    "Ines Duarte,ines@duarte.example,Lisbon\n"
)
INVENTORY = json.dumps(
    [
        {"name": "desk lamp", "qty": 14, "price": 29.9, "supplier": "Lumo"},
        {"name": "monitor arm", "qty": 3, "price": 89.0, "supplier": "Flexa"},
        {"name": "usb hub", "qty": 27, "price": 19.5, "supplier": "Lumo"},
    ],
    indent=2,
)
APP_YAML = (
    "# app settings\nname: ticket-desk\nport: 8080\ndebug: false\ndatabase:\n  host: db.internal\n  port: 5432\n"
    "features:\n  - search\n  - export\n  - dark-mode\n"
)


def _solve_contacts(ws: Path) -> None:
    lines = read(ws, "data/contacts.csv").splitlines()
    keys = lines[0].split(",")
    write(ws, "out/contacts.json", json.dumps([dict(zip(keys, line.split(","), strict=True)) for line in lines[1:]]))


def _solve_inventory(ws: Path) -> None:
    items: list[dict[str, Any]] = json.loads(read(ws, "data/inventory.json"))
    write(
        ws, "out/inventory.csv", "name,qty,price\n" + "".join(f"{i['name']},{i['qty']},{i['price']}\n" for i in items)
    )


# -- extraction ----------------------------------------------------------------------------------------------------

THREAD = (
    "From: Marta Silva <marta.silva@northwind.example>\nTo: dev-team@northwind.example\n\n"
    "Hi all, the vendor contact is j.okoro+sales@supplyhub.example and billing questions go to\n"
    "billing@supplyhub.example. Please copy Tom (tom_h@northwind.example) on anything about the contract.\n"
)
LINKS = (
    "# Reading list\n\n- [Python docs](https://docs.python.org/3/library/csv.html)\n"
    "- The style guide: https://peps.python.org/pep-0008/\n- [Slides](http://talks.example.org/2026/csv-tricks)\n\n"
    "Ask on the forum (https://discuss.python.org/c/help/7) if stuck.\n"
)
REPORT = (
    "In March the shop served 1482 customers, up 12 percent on February.\n"
    "Average basket was 23.75 EUR and returns fell to 3.5 percent.\n"
    "We hired 2 people and closed 1 of our 4 pop-up stands.\n"
)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL = re.compile(r"https?://[^\s)\]>]+")
NUMBER = re.compile(r"\d+(?:\.\d+)?")

DATA: list[Task] = [
    # -- CSV sums, averages and filters
    Task("csv_total", "text",
         "What is the total of the amount column in data/expenses.csv? Save just the number as out/total.txt",
         {"data/expenses.csv": EXPENSES},
         decimal("out/total.txt", sum(float(r["amount"]) for r in _rows(EXPENSES)), places=2),
         kind="csv_math", solve=_solve_total),
    Task("csv_average", "text",
         "Average the score column of data/scores.csv and write it, rounded to 1 decimal place, into out/average.txt",
         {"data/scores.csv": SCORES},
         decimal("out/average.txt", round(sum(int(r["score"]) for r in _rows(SCORES)) / len(_rows(SCORES)), 1),
                 places=1),
         kind="csv_math", solve=lambda ws: write(ws, "out/average.txt", "79.3\n")),
    Task("csv_filter", "text",
         "out/shipped.csv should hold only the rows of data/orders.csv whose status is shipped, with the header row "
         "first", {"data/orders.csv": ORDERS},
         csv_table("out/shipped.csv", list(_rows(ORDERS)[0]),
                   [list(r.values()) for r in _rows(ORDERS) if r["status"] == "shipped"]),
         kind="csv_math",
         solve=lambda ws: write(ws, "out/shipped.csv", "".join(
             line + "\n" for i, line in enumerate(read(ws, "data/orders.csv").splitlines())
             if i == 0 or ",shipped," in line))),
    Task("csv_group_sum", "text",
         "Sum the units per region in data/sales_q1.csv and save the result as out/by_region.csv with the columns "
         "region,total, regions in alphabetical order", {"data/sales_q1.csv": SALES_Q1},
         csv_table("out/by_region.csv", ["region", "total"], _by_region(SALES_Q1)),
         kind="csv_math", solve=_solve_region),
    # -- conversions
    Task("convert_csv_to_json", "text",
         "Convert data/contacts.csv to JSON, a list with one object per row keyed by the column names, in "
         "out/contacts.json", {"data/contacts.csv": CONTACTS},
         data_file("out/contacts.json", _rows(CONTACTS), fmt="json"),
         kind="convert", solve=_solve_contacts),
    Task("convert_json_to_csv", "text",
         "data/inventory.json holds a list of items; save them as CSV with the columns name,qty,price at "
         "out/inventory.csv", {"data/inventory.json": INVENTORY},
         csv_table("out/inventory.csv", ["name", "qty", "price"],
                   [[str(i["name"]), str(i["qty"]), str(i["price"])] for i in json.loads(INVENTORY)]),
         kind="convert", solve=_solve_inventory),
    Task("convert_yaml_to_json", "text", "Turn config/app.yaml into JSON and save it next to it as config/app.json",
         {"config/app.yaml": APP_YAML}, data_file("config/app.json", yaml.safe_load(APP_YAML), fmt="json"),
         kind="convert",
         solve=lambda ws: write(ws, "config/app.json", json.dumps(yaml.safe_load(read(ws, "config/app.yaml"))))),
    # -- extraction
    Task("extract_emails", "text", "Pull every email address out of data/thread.txt into out/emails.txt, one per line",
         {"data/thread.txt": THREAD}, exact_lines("out/emails.txt", EMAIL.findall(THREAD), any_order=True),
         kind="extract",
         solve=lambda ws: write(ws, "out/emails.txt", "marta.silva@northwind.example\ndev-team@northwind.example\n"
                                "j.okoro+sales@supplyhub.example\nbilling@supplyhub.example\ntom_h@northwind.example\n")),
    Task("extract_urls", "text", "I need all the links in notes/links.md: list the URLs in out/urls.txt",
         {"notes/links.md": LINKS}, exact_lines("out/urls.txt", URL.findall(LINKS), any_order=True),
         kind="extract",
         solve=lambda ws: write(ws, "out/urls.txt", "\n".join(
             word.strip("()[]<>").removeprefix("(") for line in read(ws, "notes/links.md").splitlines()
             for word in line.replace("](", " ").split() if "://" in word))),
    Task("extract_numbers", "text",
         "Find the numbers in data/report.txt and write each on its own line, in the order they appear, to "
         "out/numbers.txt", {"data/report.txt": REPORT}, exact_lines("out/numbers.txt", NUMBER.findall(REPORT)),
         kind="extract",
         solve=lambda ws: write(ws, "out/numbers.txt", "\n".join(
             w.strip(".,") for w in read(ws, "data/report.txt").split() if w.strip(".,").replace(".", "").isdigit()))),
]  # fmt: skip
