"""Build the bundled ``saas`` demo database from ``schemas/saas/*.yaml``.

The YAML files are the single source of truth for the DDL; this script only adds rows.
Everything is generated from ``random.Random(seed)`` and fixed calendar dates
(2023-01-01 .. 2025-06-30 UTC), so two builds with the same seed are byte-identical.

Usage::

    python data/build_database.py [--out PATH] [--seed N]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sqlite3
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_SCHEMA_DIR = REPO / "schemas" / "saas"
DEFAULT_OUT = HERE / "database" / "saas" / "saas.sqlite"

START = datetime(2023, 1, 1)
END = datetime(2025, 6, 30, 23, 59, 59)
ALLOWED_TYPES = ("INTEGER", "REAL", "TEXT")
ALLOWED_COLUMN_KEYS = {"name", "type", "description", "primary_key", "nullable", "references", "unique"}


# --------------------------------------------------------------------------------------
# Schema handling
# --------------------------------------------------------------------------------------


def load_schema(schema_dir: Path | None = None) -> list[dict[str, Any]]:
    """Every table definition in ``schema_dir``, sorted by table name, validated."""
    folder = Path(schema_dir) if schema_dir is not None else DEFAULT_SCHEMA_DIR
    tables = []
    for path in sorted(folder.glob("*.yaml")):
        table = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(table, dict) or set(table) - {"name", "description", "columns"}:
            raise ValueError(f"{path}: expected keys name, description, columns")
        for column in table["columns"]:
            extra = set(column) - ALLOWED_COLUMN_KEYS
            if extra:
                raise ValueError(f"{path}: column {column.get('name')}: unknown keys {sorted(extra)}")
            if column["type"] not in ALLOWED_TYPES:
                raise ValueError(f"{path}: column {column['name']}: type {column['type']!r}")
        tables.append(table)
    if not tables:
        raise ValueError(f"no table files in {folder}")
    return sorted(tables, key=lambda t: t["name"])


def table_ddl(table: dict[str, Any]) -> str:
    """``CREATE TABLE`` for one table definition."""
    columns = table["columns"]
    pk = [c["name"] for c in columns if c.get("primary_key")]
    lines = []
    for c in columns:
        parts = [c["name"], c["type"]]
        if c.get("primary_key") and len(pk) == 1:
            parts.append("PRIMARY KEY")
            if c["type"] != "INTEGER":  # only INTEGER PRIMARY KEY (the rowid) is implicitly non-null
                parts.append("NOT NULL")
        elif c.get("primary_key") or not c.get("nullable", False):
            parts.append("NOT NULL")
        if c.get("unique"):
            parts.append("UNIQUE")
        lines.append("  " + " ".join(parts))
    if len(pk) > 1:
        lines.append(f"  PRIMARY KEY ({', '.join(pk)})")
    for c in columns:
        if c.get("references"):
            ref_table, ref_column = c["references"].split(".")
            lines.append(f"  FOREIGN KEY ({c['name']}) REFERENCES {ref_table}({ref_column})")
    return f"CREATE TABLE {table['name']} (\n" + ",\n".join(lines) + "\n)"


def creation_order(tables: list[dict[str, Any]]) -> list[str]:
    """Table names ordered so that referenced tables come first (alphabetical among equals)."""
    deps = {
        t["name"]: sorted({c["references"].split(".")[0] for c in t["columns"] if c.get("references")} - {t["name"]})
        for t in tables
    }
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(deps):
        ready = [n for n in sorted(deps) if n not in done and all(d in done for d in deps[n])]
        if not ready:
            raise ValueError(f"foreign-key cycle among {sorted(set(deps) - done)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def ts(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def add_months(value: datetime, months: int) -> datetime:
    month = value.month - 1 + months
    year = value.year + month // 12
    month = month % 12 + 1
    return value.replace(year=year, month=month, day=min(value.day, 28))


class Gen:
    """Holds the random source and the generated rows."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rows: dict[str, list[dict[str, Any]]] = {}

    # random helpers -------------------------------------------------------------------
    def between(self, a: datetime, b: datetime) -> datetime:
        span = int((b - a).total_seconds())
        return a + timedelta(seconds=self.rng.randint(0, max(span, 0)))

    def skewed(self, a: datetime, b: datetime, power: float) -> datetime:
        span = max((b - a).total_seconds(), 0)
        return a + timedelta(seconds=int(span * self.rng.random() ** power))

    def wchoice(self, items: list[Any], weights: list[float]) -> Any:
        return self.rng.choices(items, weights=weights, k=1)[0]

    def ip(self, country: str | None) -> str:
        blocks = IP_BLOCKS.get(country or "", [203, 45, 61])
        return f"{self.rng.choice(blocks)}.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"


# --------------------------------------------------------------------------------------
# Static reference data
# --------------------------------------------------------------------------------------

# code, name, region, billing currency, VAT rate, EU member, IANA time zones
COUNTRIES = [
    ("AE", "United Arab Emirates", "Middle East & Africa", "USD", 0.05, 0, ["Asia/Dubai"]),
    ("AR", "Argentina", "Latin America", "USD", 0.0, 0, ["America/Argentina/Buenos_Aires"]),
    ("AU", "Australia", "Asia Pacific", "USD", 0.10, 0, ["Australia/Sydney", "Australia/Melbourne", "Australia/Perth"]),
    ("BR", "Brazil", "Latin America", "USD", 0.0, 0, ["America/Sao_Paulo"]),
    ("CA", "Canada", "North America", "USD", 0.05, 0, ["America/Toronto", "America/Vancouver"]),
    ("CH", "Switzerland", "Europe", "EUR", 0.081, 0, ["Europe/Zurich"]),
    ("CN", "China", "Asia Pacific", "USD", 0.0, 0, ["Asia/Shanghai"]),
    ("DE", "Germany", "Europe", "EUR", 0.19, 1, ["Europe/Berlin"]),
    ("ES", "Spain", "Europe", "EUR", 0.21, 1, ["Europe/Madrid"]),
    ("FR", "France", "Europe", "EUR", 0.20, 1, ["Europe/Paris"]),
    ("GB", "United Kingdom", "Europe", "GBP", 0.20, 0, ["Europe/London"]),
    ("IE", "Ireland", "Europe", "EUR", 0.23, 1, ["Europe/Dublin"]),
    ("IL", "Israel", "Middle East & Africa", "USD", 0.17, 0, ["Asia/Jerusalem"]),
    ("IN", "India", "Asia Pacific", "USD", 0.18, 0, ["Asia/Kolkata"]),
    ("IT", "Italy", "Europe", "EUR", 0.22, 1, ["Europe/Rome"]),
    ("JP", "Japan", "Asia Pacific", "USD", 0.10, 0, ["Asia/Tokyo"]),
    ("MX", "Mexico", "Latin America", "USD", 0.16, 0, ["America/Mexico_City"]),
    ("NG", "Nigeria", "Middle East & Africa", "USD", 0.075, 0, ["Africa/Lagos"]),
    ("NL", "Netherlands", "Europe", "EUR", 0.21, 1, ["Europe/Amsterdam"]),
    ("NO", "Norway", "Europe", "EUR", 0.25, 0, ["Europe/Oslo"]),
    ("NZ", "New Zealand", "Asia Pacific", "USD", 0.15, 0, ["Pacific/Auckland"]),
    ("PL", "Poland", "Europe", "EUR", 0.23, 1, ["Europe/Warsaw"]),
    ("RU", "Russia", "Europe", "USD", 0.0, 0, ["Europe/Moscow"]),
    ("SE", "Sweden", "Europe", "EUR", 0.25, 1, ["Europe/Stockholm"]),
    ("SG", "Singapore", "Asia Pacific", "USD", 0.09, 0, ["Asia/Singapore"]),
    ("US", "United States", "North America", "USD", 0.0, 0,
     ["America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"]),
    ("VN", "Vietnam", "Asia Pacific", "USD", 0.0, 0, ["Asia/Ho_Chi_Minh"]),
    ("ZA", "South Africa", "Middle East & Africa", "USD", 0.15, 0, ["Africa/Johannesburg"]),
]
COUNTRY = {c[0]: c for c in COUNTRIES}
ORG_COUNTRY_WEIGHTS = {
    "US": 18, "GB": 8, "DE": 8, "FR": 4, "NL": 3, "ES": 2, "IT": 2, "SE": 2, "PL": 1, "IE": 2, "CH": 1,
    "CA": 3, "BR": 2, "MX": 1, "IN": 2, "JP": 1, "SG": 1, "AU": 3, "NZ": 1, "ZA": 1, "AE": 1, "IL": 1,
}
ATTACK_COUNTRIES = ["RU", "CN", "VN", "BR", "NG", "IN", None]
IP_BLOCKS = {
    "US": [24, 66, 73, 98, 104, 172], "CA": [24, 70, 142], "MX": [187, 189], "BR": [177, 179, 189, 200],
    "AR": [181, 190], "GB": [81, 86, 90, 109], "IE": [79, 86, 89], "DE": [84, 87, 91, 93], "FR": [78, 82, 90],
    "NL": [77, 83, 145], "ES": [79, 83, 88], "IT": [79, 87, 93], "SE": [78, 83, 90], "PL": [83, 89, 178],
    "CH": [77, 85, 178], "NO": [79, 84, 88], "IN": [49, 106, 117], "JP": [60, 126, 133], "SG": [116, 118, 175],
    "AU": [1, 101, 110], "NZ": [101, 122, 125], "ZA": [41, 102, 105], "AE": [86, 92, 94], "IL": [31, 46, 79],
    "NG": [102, 105, 197], "RU": [5, 95, 185], "CN": [36, 58, 117], "VN": [14, 113, 171],
}
TLD = {"US": "com", "CA": "ca", "MX": "mx", "BR": "com.br", "GB": "co.uk", "IE": "ie", "DE": "de", "FR": "fr",
       "NL": "nl", "ES": "es", "IT": "it", "SE": "se", "PL": "pl", "CH": "ch", "IN": "in", "JP": "jp",
       "SG": "sg", "AU": "com.au", "NZ": "co.nz", "ZA": "co.za", "AE": "ae", "IL": "co.il"}

# id, name, monthly cents/seat, annual cents/seat, max seats, sso, audit log, legacy, introduced
PLANS = [
    (1, "Free", 0, 0, 5, 0, 0, 0, datetime(2021, 3, 1)),
    (2, "Starter", 800, 8000, 25, 0, 0, 0, datetime(2021, 3, 1)),
    (3, "Team", 1500, 15000, 100, 0, 0, 0, datetime(2021, 3, 1)),
    (4, "Business", 2500, 25000, 500, 1, 1, 0, datetime(2023, 7, 1)),
    (5, "Growth", 2500, 24000, 250, 0, 1, 1, datetime(2021, 9, 1)),
    (6, "Enterprise", 4500, 45000, None, 1, 1, 0, datetime(2021, 3, 1)),
]
PLAN_NAME = {p[0]: p[1] for p in PLANS}
# local monthly list price per seat in EUR / GBP cents (annual = 10 x monthly)
LOCAL_MONTHLY = {"EUR": {1: 0, 2: 800, 3: 1500, 4: 2500, 5: 2500, 6: 4500},
                 "GBP": {1: 0, 2: 700, 3: 1200, 4: 2000, 5: 2000, 6: 3600}}

ROLES = [
    (1, "owner", "Full control of the organization, including billing, security settings and deleting the workspace.", 1),
    (2, "admin", "Manages members, teams, projects and most settings of the organization.", 1),
    (3, "billing_admin", "Manages the subscription, payment methods and invoices.", 1),
    (4, "security_admin", "Manages SSO, MFA policy, API keys and can block or unblock users.", 1),
    (5, "developer", "Can create API keys and webhooks and use the REST API.", 0),
    (6, "member", "Regular user who can create and edit projects.", 0),
    (7, "viewer", "Read-only access to projects shared with them.", 0),
    (8, "auditor", "Read-only access to the audit log and security reports.", 0),
]

COUPONS = [
    (1, "LAUNCH20", "Launch promotion 20% off", 20, None, None, "repeating", 3, datetime(2023, 1, 1), datetime(2023, 3, 31, 23, 59, 59), 50),
    (2, "WELCOME10", "Welcome discount 10% off first invoice", 10, None, None, "once", None, datetime(2023, 1, 1), None, None),
    (3, "NONPROFIT50", "Non-profit 50% discount", 50, None, None, "forever", None, datetime(2023, 1, 1), None, None),
    (4, "BLACKFRIDAY23", "Black Friday 2023", 30, None, None, "repeating", 6, datetime(2023, 11, 20), datetime(2023, 11, 30, 23, 59, 59), 100),
    (5, "EDU25", "Education 25% discount", 25, None, None, "forever", None, datetime(2023, 2, 1), None, None),
    (6, "PARTNER100", "Partner referral credit $100", None, 10000, "USD", "once", None, datetime(2023, 4, 1), None, None),
    (7, "SWITCH500", "Switch from a competitor $500 credit", None, 50000, "USD", "once", None, datetime(2023, 6, 1), datetime(2024, 12, 31, 23, 59, 59), 20),
    (8, "EUROPE15", "European expansion 15% off", 15, None, None, "repeating", 12, datetime(2024, 3, 1), datetime(2024, 6, 30, 23, 59, 59), 30),
    (9, "BLACKFRIDAY24", "Black Friday 2024", 30, None, None, "repeating", 6, datetime(2024, 11, 25), datetime(2024, 12, 2, 23, 59, 59), 100),
    (10, "SPRING2025", "Spring 2025 campaign 20% off", 20, None, None, "repeating", 3, datetime(2025, 3, 1), datetime(2025, 5, 31, 23, 59, 59), 25),
    (11, "SUMMER2025", "Summer 2025 campaign 15% off", 15, None, None, "repeating", 3, datetime(2025, 7, 1), datetime(2025, 8, 31, 23, 59, 59), 25),
]

FEATURE_FLAGS = [
    ("new_billing_page", "New billing page", "Redesigned billing and invoices page.", "billing", 1, 100, datetime(2023, 2, 6), datetime(2024, 1, 15)),
    ("ai_assistant", "AI assistant", "Chat assistant that drafts project plans.", "growth", 0, 10, datetime(2024, 9, 2), None),
    ("dark_mode", "Dark mode", "Dark colour theme for the web app.", "core", 1, 100, datetime(2023, 3, 20), None),
    ("bulk_user_import", "Bulk user import", "Invite many users at once from a CSV file.", "core", 0, 50, datetime(2023, 8, 14), None),
    ("audit_log_export", "Audit log export", "Export the audit log to CSV or a SIEM.", "security", 0, 25, datetime(2023, 10, 2), None),
    ("scim_provisioning", "SCIM provisioning", "Automatic user provisioning from the identity provider via SCIM.", "security", 0, 0, datetime(2024, 2, 12), None),
    ("passkeys_login", "Passkey login", "Sign in with passkeys instead of a password.", "security", 0, 20, datetime(2024, 11, 4), None),
    ("session_timeout_controls", "Session timeout controls", "Admins can set the idle session timeout.", "security", 1, 100, datetime(2023, 5, 8), None),
    ("ip_allowlist", "IP allowlist", "Restrict sign-in to a list of IP ranges.", "security", 0, 0, datetime(2024, 4, 22), None),
    ("usage_dashboard_v2", "Usage dashboard v2", "New API usage and seat analytics dashboard.", "platform", 0, 40, datetime(2024, 6, 3), None),
    ("project_templates", "Project templates", "Start a project from a template.", "growth", 1, 100, datetime(2023, 4, 17), None),
    ("webhook_retries", "Webhook retries", "Retry failed webhook deliveries with backoff.", "platform", 1, 100, datetime(2023, 9, 11), None),
    ("granular_api_scopes", "Granular API scopes", "Fine-grained permission scopes for API keys.", "platform", 0, 15, datetime(2025, 1, 13), None),
    ("legacy_reports", "Legacy reports", "Old reporting module kept for a few customers.", "core", 0, 0, datetime(2023, 1, 9), datetime(2024, 8, 30)),
    ("beta_mobile_app", "Mobile app beta", "Access to the native mobile app beta.", "core", 0, 30, datetime(2024, 3, 4), None),
    ("custom_roles", "Custom roles", "Define custom permission roles.", "security", 0, 5, datetime(2025, 2, 17), None),
    ("slack_integration", "Slack integration", "Send project notifications to Slack.", "growth", 1, 100, datetime(2023, 6, 26), None),
    ("data_residency_eu", "EU data residency", "Store customer data in the EU region only.", "platform", 0, 0, datetime(2024, 1, 29), None),
    ("smart_notifications", "Smart notifications", "Batch and prioritise email notifications.", "growth", 0, 60, datetime(2024, 12, 9), None),
]

SUPPORT_AGENTS = [
    ("Hannah Lindqvist", "billing", datetime(2022, 3, 14), 1),
    ("Marcus Okafor", "technical", datetime(2022, 1, 10), 1),
    ("Priya Raman", "technical", datetime(2022, 5, 2), 1),
    ("Tomasz Wojcik", "security", datetime(2022, 2, 7), 1),
    ("Elena Petrova", "billing", datetime(2022, 9, 19), 0),
    ("Jamal Carter", "technical", datetime(2022, 11, 28), 1),
    ("Sofia Marquez", "security", datetime(2023, 1, 16), 1),
    ("Kenji Watanabe", "technical", datetime(2022, 6, 20), 0),
    ("Amara Nwosu", "billing", datetime(2023, 4, 3), 1),
    ("Lukas Becker", "technical", datetime(2023, 2, 13), 1),
    ("Chloe Dubois", "security", datetime(2024, 2, 5), 1),
    ("Daniel Kim", "technical", datetime(2024, 5, 20), 1),
    ("Olivia Bennett", "billing", datetime(2024, 8, 12), 1),
    ("Rafael Costa", "technical", datetime(2022, 4, 11), 1),
]

ORG_PREFIXES = [
    "Northwind", "Bluepeak", "Brightline", "Cedarwood", "Ironbark", "Lumen", "Harborview", "Quartz", "Summit",
    "Atlas", "Juniper", "Copperleaf", "Silverline", "Redwood", "Granite", "Orbital", "Nimbus", "Evergreen",
    "Falconridge", "Meridian", "Pinecrest", "Sparrow", "Tidewater", "Vertex", "Willowbrook", "Zenith", "Aurora",
    "Beacon", "Crescent", "Driftwood", "Emberly", "Foxglove", "Helix", "Kestrel", "Larkspur", "Maplestone",
    "Novara", "Oakridge", "Polaris", "Riverbend", "Saffron", "Thistle", "Umbra", "Vantage", "Wavecrest",
    "Alderway", "Basalt", "Cobalt", "Dunmore", "Elmstead", "Fjordline", "Glacier", "Hollis", "Inkwell",
    "Jadeport", "Keystone", "Lighthouse", "Monarch", "Northstar", "Openfield", "Pebblebrook", "Quillon",
    "Rosewater", "Stonegate", "Tamarack", "Upland", "Bramble", "Clearwater", "Ashford", "Halcyon", "Larchmont",
    "Marigold", "Sunridge", "Westbrook", "Bellhaven", "Corvid",
]
INDUSTRY_SUFFIXES = {
    "Software": ["Labs", "Software", "Systems", "Cloud"],
    "Healthcare": ["Health", "Clinics", "Medical"],
    "Finance": ["Capital", "Finance", "Payments"],
    "Retail": ["Goods", "Outfitters", "Market"],
    "Logistics": ["Logistics", "Freight", "Shipping"],
    "Education": ["Academy", "Learning"],
    "Manufacturing": ["Manufacturing", "Industries", "Works"],
    "Media": ["Media", "Studios"],
    "Consulting": ["Consulting", "Partners", "Advisory"],
}
INDUSTRY_WEIGHTS = {"Software": 22, "Healthcare": 9, "Finance": 10, "Retail": 9, "Logistics": 8,
                    "Education": 6, "Manufacturing": 8, "Media": 6, "Consulting": 8}

FIRST_NAMES = [
    "James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
    "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen",
    "Daniel", "Nancy", "Matthew", "Lisa", "Anthony", "Emily", "Mark", "Olivia", "Paul", "Emma", "Steven",
    "Sophie", "Andrew", "Laura", "Kevin", "Anna", "Brian", "Julia", "George", "Chloe", "Lukas", "Lena",
    "Felix", "Hannah", "Jonas", "Mia", "Pierre", "Camille", "Louis", "Manon", "Luca", "Giulia", "Marco",
    "Francesca", "Javier", "Lucia", "Carlos", "Sofia", "Pedro", "Ana", "Hiroshi", "Yuki", "Kenta", "Aiko",
    "Arjun", "Priya", "Rahul", "Ananya", "Wei", "Mei", "Oluwaseun", "Chiamaka", "Sipho", "Thandi", "Noah",
    "Ava", "Liam", "Isla", "Erik", "Ingrid", "Piotr", "Zofia", "Sean", "Aoife", "Omar", "Layla", "Yosef",
    "Noa", "Lars", "Astrid", "Mateo", "Valentina", "Ethan", "Grace", "Jack", "Ruby",
]
LAST_NAMES = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
    "Wilson", "Anderson", "Taylor", "Thomas", "Moore", "Jackson", "Martin", "Lee", "Thompson", "White",
    "Harris", "Clark", "Lewis", "Walker", "Hall", "Young", "King", "Wright", "Scott", "Green", "Baker",
    "Adams", "Nelson", "Hill", "Campbell", "Mitchell", "Roberts", "Carter", "Phillips", "Evans", "Müller",
    "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Dubois", "Laurent", "Bernard", "Moreau",
    "Rossi", "Russo", "Ferrari", "Esposito", "Fernandez", "Lopez", "Gonzalez", "Sanchez", "Silva", "Santos",
    "Oliveira", "Tanaka", "Suzuki", "Sato", "Patel", "Sharma", "Singh", "Gupta", "Chen", "Wang", "Li",
    "Okafor", "Adeyemi", "Nkosi", "Dlamini", "Murphy", "O'Brien", "Kelly", "Nowak", "Kowalski", "Johansson",
    "Andersson", "Nilsson", "Hansen", "Larsen", "Cohen", "Levi", "Haddad", "Kaur", "Novak", "de Vries",
    "van Dijk", "Jansen",
]
JOB_TITLES = [
    "Software Engineer", "Senior Software Engineer", "Engineering Manager", "Product Manager", "Designer",
    "Data Analyst", "Marketing Manager", "Sales Representative", "Account Executive", "Finance Manager",
    "Controller", "Operations Manager", "Customer Success Manager", "IT Administrator", "Security Engineer",
    "CTO", "CEO", "COO", "Head of Marketing", "HR Business Partner", "Project Manager", "QA Engineer",
    "DevOps Engineer", "Support Specialist", "Office Manager", "Consultant",
]
TEAM_NAMES = ["Engineering", "Product", "Design", "Marketing", "Sales", "Finance", "Operations",
              "Customer Success", "Security", "Data", "People", "Legal"]
PROJECT_NAMES = [
    "Website Redesign", "Q3 Roadmap", "Mobile App v2", "Data Warehouse Migration", "Onboarding Revamp",
    "Customer Portal", "Brand Refresh", "Pricing Experiment", "SOC 2 Readiness", "Hiring Plan 2024",
    "Annual Budget", "Partner Program", "Support Knowledge Base", "API v2 Launch", "Cloud Cost Reduction",
    "Warehouse Automation", "Product Launch Spring", "Security Audit", "Churn Analysis", "Email Campaigns",
    "Sales Playbook", "Vendor Review", "Office Move", "ERP Integration", "Compliance Tracker",
    "Incident Postmortems", "Design System", "Localization", "Event Planning", "Board Reporting",
]
API_ENDPOINTS = [
    ("GET", "/v1/projects", 20), ("POST", "/v1/projects", 4), ("GET", "/v1/projects/{id}", 14),
    ("PATCH", "/v1/projects/{id}", 4), ("DELETE", "/v1/projects/{id}", 1), ("GET", "/v1/users", 12),
    ("POST", "/v1/users/invite", 2), ("DELETE", "/v1/users/{id}", 1), ("GET", "/v1/teams", 6),
    ("PUT", "/v1/teams/{id}/members", 2), ("GET", "/v1/audit-events", 7), ("GET", "/v1/invoices", 3),
    ("POST", "/v1/webhooks", 1), ("GET", "/v1/usage", 8), ("GET", "/v1/tasks", 12), ("POST", "/v1/tasks", 6),
]
WEBHOOK_EVENTS = ["project.created", "project.archived", "user.invited", "user.deactivated", "task.created",
                  "task.completed", "invoice.paid", "subscription.updated"]
TICKET_SUBJECTS = {
    "billing": ["Invoice shows the wrong number of seats", "Charged twice this month", "Need a copy of our VAT invoice",
                "How do I switch to annual billing?", "Card was declined but we have funds",
                "Please update our billing address", "Refund request for unused seats"],
    "bug": ["Export to CSV times out", "Project board does not load", "Notifications arrive twice",
            "Search returns no results", "Dark mode text is unreadable", "Webhook payload missing fields",
            "Error 500 when saving a task"],
    "account_access": ["I am locked out of my account", "Cannot log in after password reset",
                       "Lost my authenticator phone", "SSO login loops back to the sign-in page",
                       "Invitation link expired", "Account blocked, please unblock"],
    "security": ["Suspicious login alerts from another country", "Please rotate our API keys",
                 "Request for your SOC 2 report", "How do we enforce MFA for all members?",
                 "Report a possible phishing email", "Need audit log for an investigation"],
    "feature_request": ["Please add Gantt charts", "Support for custom roles", "Request: Jira integration",
                        "Allow more than 10 webhooks", "Add passkey support", "Bulk edit tasks"],
    "how_to": ["How do I add a new team?", "How to transfer project ownership", "Setting up SAML SSO with Okta",
               "How do I invite external guests?", "Where can I see API usage?", "How to archive old projects"],
}
TICKET_BODIES = [
    "Hi team, could you take a look at this as soon as possible? Thanks.",
    "This started happening this morning for several people in our company.",
    "Steps to reproduce are in the attached screenshot. Please advise.",
    "We are on a deadline this week, so a quick answer would help a lot.",
    "Not urgent, but we would appreciate some guidance.",
    "I tried the steps in the help center but it did not work.",
]
AGENT_REPLIES = [
    "Thanks for reaching out! I am looking into this now.",
    "Could you share the time it happened and the email address affected?",
    "I have escalated this to our engineering team and will update you shortly.",
    "This should be fixed now. Can you confirm on your side?",
    "Here is a link to the help article that explains the steps.",
    "I have applied the change to your account.",
]
CUSTOMER_REPLIES = ["Thanks, that worked!", "Still seeing the problem, unfortunately.",
                    "Here is the information you asked for.", "Great, you can close the ticket."]
INTERNAL_NOTES = ["Checked the logs, looks like a known issue.", "Customer is on a legacy plan, be careful with changes.",
                  "Verified identity via the account owner before unblocking.", "Escalated to tier 2."]


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------


def generate(seed: int) -> dict[str, list[dict[str, Any]]]:
    g = Gen(seed)
    rng = g.rng
    R = g.rows

    # ---- reference tables ----------------------------------------------------------
    R["countries"] = [
        {"code": c, "name": n, "region": r, "currency": cur, "vat_rate": vat, "is_eu_member": eu}
        for c, n, r, cur, vat, eu, _ in COUNTRIES
    ]
    R["plans"] = [
        {"id": i, "name": n, "monthly_price_cents": m, "annual_price_cents": a, "currency": "USD", "max_seats": s,
         "includes_sso": sso, "includes_audit_log": al, "is_legacy": leg, "created_at": created}
        for i, n, m, a, s, sso, al, leg, created in PLANS
    ]
    R["roles"] = [{"id": i, "name": n, "description": d, "is_privileged": p} for i, n, d, p in ROLES]
    role_id = {r[1]: r[0] for r in ROLES}
    R["coupons"] = [
        {"id": i, "code": code, "name": name, "percent_off": pct, "amount_off_cents": amt, "currency": cur,
         "duration": dur, "duration_months": months, "valid_from": vf, "valid_until": vu, "max_redemptions": mx}
        for i, code, name, pct, amt, cur, dur, months, vf, vu, mx in COUPONS
    ]
    R["feature_flags"] = [
        {"id": i + 1, "key": k, "name": n, "description": d, "owner_team": team, "default_enabled": de,
         "rollout_percentage": pct, "created_at": created, "archived_at": archived}
        for i, (k, n, d, team, de, pct, created, archived) in enumerate(FEATURE_FLAGS)
    ]
    R["support_agents"] = [
        {"id": i + 1, "full_name": n, "email": n.lower().replace(" ", ".") + "@support.tasklane.io", "team": team,
         "hired_at": hired, "is_active": active}
        for i, (n, team, hired, active) in enumerate(SUPPORT_AGENTS)
    ]

    # ---- organizations ---------------------------------------------------------------
    n_orgs = 72
    prefixes = ORG_PREFIXES[:]
    rng.shuffle(prefixes)
    created = sorted(g.skewed(START, datetime(2025, 5, 31), 2.0) for _ in range(n_orgs - 4))
    created += sorted(g.between(datetime(2025, 6, 17), datetime(2025, 6, 28)) for _ in range(4))
    country_codes = list(ORG_COUNTRY_WEIGHTS)
    industries = list(INDUSTRY_WEIGHTS)
    orgs = []
    for i in range(n_orgs):
        industry = g.wchoice(industries, [INDUSTRY_WEIGHTS[x] for x in industries])
        name = f"{prefixes[i]} {rng.choice(INDUSTRY_SUFFIXES[industry])}"
        cc = g.wchoice(country_codes, [ORG_COUNTRY_WEIGHTS[x] for x in country_codes])
        slug = name.lower().replace(" ", "-")
        orgs.append({
            "id": i + 1, "name": name, "slug": slug, "domain": f"{slug}.{TLD[cc]}", "country_code": cc,
            "industry": industry, "employee_count": int(round(math.exp(rng.uniform(math.log(8), math.log(6000))))),
            "created_at": created[i] + timedelta(hours=rng.randint(8, 17)) - timedelta(hours=created[i].hour),
            "deleted_at": None,
        })
    R["organizations"] = orgs
    org_by_id = {o["id"]: o for o in orgs}

    # plan history per organization: list of dicts (plan, start, end, reason)
    late = {o["id"] for o in orgs[-4:]}
    org_plan: dict[int, int] = {}
    for o in orgs:
        if o["id"] in late:
            org_plan[o["id"]] = g.wchoice([3, 4, 6], [3, 2, 1])
            continue
        options, weights = [1, 2, 3, 4, 6], [16, 16, 24, 22, 12]
        if o["created_at"] < datetime(2023, 7, 1):
            options, weights = [1, 2, 3, 5, 6], [14, 16, 24, 9, 13]
        org_plan[o["id"]] = g.wchoice(options, weights)
    # make sure some orgs are on each plan (Growth is only sold before July 2023)
    early = [o["id"] for o in orgs if o["created_at"] < datetime(2023, 7, 1)]
    if sum(1 for v in org_plan.values() if v == 5) < 4:
        for oid in early[1:12:3]:
            org_plan[oid] = 5
    # deleted (closed) organizations and other churn
    candidates = [o["id"] for o in orgs if o["created_at"] < datetime(2024, 6, 1)]
    closed = sorted(rng.sample(candidates, 4))
    for oid in closed:
        o = org_by_id[oid]
        o["deleted_at"] = g.between(max(o["created_at"] + timedelta(days=200), datetime(2024, 3, 1)), datetime(2025, 5, 31))
    churned = sorted(rng.sample([c for c in candidates if c not in closed and org_plan[c] != 1], 5))
    past_due = sorted(rng.sample([o["id"] for o in orgs if o["id"] not in closed and o["id"] not in churned
                                  and o["id"] not in late and org_plan[o["id"]] not in (1,)], 6))

    # ---- users ------------------------------------------------------------------------
    size_range = {1: (2, 5), 2: (3, 9), 3: (4, 12), 4: (5, 18), 5: (5, 16), 6: (12, 30)}
    raw_users = []
    used_emails: set[str] = set()
    for o in orgs:
        lo, hi = size_range[org_plan[o["id"]]]
        n = rng.randint(lo, hi)
        if o["id"] in late:
            n = rng.randint(2, 5)
        org_end = o["deleted_at"] or END
        for k in range(n):
            first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
            local = f"{first}.{last}".lower().replace(" ", "").replace("'", "").replace("ü", "u")
            email = f"{local}@{o['domain']}"
            suffix = 2
            while email in used_emails:
                email = f"{local}{suffix}@{o['domain']}"
                suffix += 1
            used_emails.add(email)
            if k == 0:
                created_at = o["created_at"] + timedelta(minutes=rng.randint(1, 30))
            else:
                created_at = g.skewed(o["created_at"] + timedelta(hours=1), org_end - timedelta(days=1), 1.6)
            cc = o["country_code"] if rng.random() < 0.82 else g.wchoice(country_codes, [ORG_COUNTRY_WEIGHTS[x] for x in country_codes])
            raw_users.append({
                "organization_id": o["id"], "email": email, "full_name": f"{first} {last}",
                "job_title": rng.choice(JOB_TITLES) if rng.random() < 0.78 else None,
                "country_code": cc, "timezone": rng.choice(COUNTRY[cc][6]), "status": "active", "email_verified": 1,
                "created_at": created_at, "last_login_at": None, "deleted_at": None,
                "_owner": k == 0, "_seq": len(raw_users),
            })
    raw_users.sort(key=lambda u: (u["created_at"], u["_seq"]))
    users = []
    for i, u in enumerate(raw_users):
        u["id"] = i + 1
        users.append(u)
    R["users"] = users
    user_by_id = {u["id"]: u for u in users}
    org_users: dict[int, list[dict]] = {o["id"]: [] for o in orgs}
    for u in users:
        org_users[u["organization_id"]].append(u)
    owner_of = {oid: next(u for u in us if u["_owner"]) for oid, us in org_users.items()}

    non_owner = [u for u in users if not u["_owner"]]
    # deactivated users (all users of closed orgs too)
    for oid in closed:
        for u in org_users[oid]:
            u["status"] = "deactivated"
            u["deleted_at"] = org_by_id[oid]["deleted_at"]
    pool = [u for u in non_owner if u["deleted_at"] is None and u["created_at"] < datetime(2025, 3, 1)]
    for u in rng.sample(pool, 22):
        u["status"] = "deactivated"
        u["deleted_at"] = g.between(u["created_at"] + timedelta(days=20), END - timedelta(days=2))
    pool = [u for u in non_owner if u["status"] == "active"]
    for u in rng.sample(pool, 36):
        u["status"] = "invited"
        u["email_verified"] = 0
        u["_never"] = True
    pool = [u for u in non_owner if u["status"] == "active"]
    for u in rng.sample(pool, 14):  # provisioned but never signed in
        u["_never"] = True
        u["email_verified"] = rng.choice([0, 1])
    loggable = [u for u in users if not u.get("_never")]

    def window(u: dict) -> tuple[datetime, datetime]:
        return u["created_at"] + timedelta(minutes=5), (u["deleted_at"] or END)

    # ---- roles ---------------------------------------------------------------------------
    user_roles = []
    held: dict[int, dict[int, datetime]] = {u["id"]: {} for u in users}

    def grant(u: dict, rid: int, at: datetime, by: int | None) -> None:
        if rid in held[u["id"]]:
            return
        held[u["id"]][rid] = at
        user_roles.append({"user_id": u["id"], "role_id": rid, "granted_at": at, "granted_by": by})

    for u in users:
        o_owner = owner_of[u["organization_id"]]
        if u["_owner"]:
            grant(u, role_id["owner"], u["created_at"], None)
        else:
            grant(u, role_id["member"] if rng.random() < 0.72 else role_id["viewer"], u["created_at"], o_owner["id"])
    for o in orgs:
        us = [u for u in org_users[o["id"]] if not u["_owner"] and u["status"] != "invited"]
        owner = owner_of[o["id"]]
        o_end = o["deleted_at"] or END

        def later(u: dict) -> datetime:
            end = u["deleted_at"] or o_end
            return g.between(u["created_at"], min(u["created_at"] + timedelta(days=120), end))

        if not us:
            if rng.random() < 0.6:
                grant(owner, role_id["billing_admin"], later(owner), owner["id"])
            continue
        for u in rng.sample(us, min(len(us), max(1, len(us) // 8))):
            grant(u, role_id["admin"], later(u), owner["id"])
        if rng.random() < 0.75:
            target = rng.choice(us + [owner])
            grant(target, role_id["billing_admin"], later(target), owner["id"])
        if rng.random() < 0.4 and len(us) >= 3:
            target = rng.choice(us)
            grant(target, role_id["security_admin"], later(target), owner["id"])
        for u in us:
            if rng.random() < 0.2:
                grant(u, role_id["developer"], later(u), owner["id"])
        if rng.random() < 0.15:
            target = rng.choice(us)
            grant(target, role_id["auditor"], later(target), owner["id"])
    # at least two auditors and one security admin that is never used elsewhere
    user_roles.sort(key=lambda r: (r["user_id"], r["role_id"]))
    R["user_roles"] = user_roles

    def admins_at(oid: int, at: datetime, exclude: int | None = None) -> list[int]:
        ids = []
        for u in org_users[oid]:
            if u["id"] == exclude or u.get("_never"):
                continue
            if u["deleted_at"] is not None and u["deleted_at"] <= at:
                continue
            for rid in (1, 2, 4):
                if rid in held[u["id"]] and held[u["id"]][rid] <= at:
                    ids.append(u["id"])
                    break
        return ids

    # ---- teams, members, projects --------------------------------------------------------
    teams, members, projects = [], [], []
    user_teams: dict[int, list[int]] = {u["id"]: [] for u in users}
    for o in orgs:
        us = org_users[o["id"]]
        o_end = o["deleted_at"] or END
        n_teams = min(5, 1 + len(us) // 6)
        names = rng.sample(TEAM_NAMES, n_teams)
        tids = []
        for name in names:
            team = {"id": len(teams) + 1, "organization_id": o["id"], "name": name,
                    "created_at": g.skewed(o["created_at"] + timedelta(hours=1), o_end - timedelta(days=1), 2.0)}
            teams.append(team)
            tids.append(team)
        for u in us:
            if u["status"] == "invited":
                continue
            r = rng.random()
            k = 0 if r < 0.15 else (2 if r > 0.85 and len(tids) > 1 else 1)
            for team in rng.sample(tids, k):
                joined = max(team["created_at"], u["created_at"]) + timedelta(minutes=rng.randint(5, 60 * 24 * 20))
                if joined >= (u["deleted_at"] or o_end):
                    continue
                members.append({"team_id": team["id"], "user_id": u["id"], "is_lead": 0, "joined_at": joined})
                user_teams[u["id"]].append(team["id"])
    members.sort(key=lambda m: (m["team_id"], m["joined_at"], m["user_id"]))
    by_team: dict[int, list[dict]] = {}
    for m in members:
        by_team.setdefault(m["team_id"], []).append(m)
    for tid in sorted(by_team):
        if rng.random() < 0.85:
            rng.choice(by_team[tid])["is_lead"] = 1
    R["teams"], R["team_members"] = teams, members
    for o in orgs:
        active = [u for u in org_users[o["id"]] if u["status"] != "invited" and not u.get("_never")]
        o_end = o["deleted_at"] or END
        for _ in range(max(1, int(len(active) * rng.uniform(0.4, 1.2)))):
            owner = rng.choice(active)
            u_end = owner["deleted_at"] or o_end
            created_at = g.between(owner["created_at"] + timedelta(hours=2), u_end)
            team_id = rng.choice(user_teams[owner["id"]]) if user_teams[owner["id"]] and rng.random() < 0.75 else None
            archived = g.between(created_at + timedelta(days=7), END) if rng.random() < 0.15 and created_at < END - timedelta(days=30) else None
            projects.append({"id": 0, "organization_id": o["id"], "team_id": team_id, "owner_user_id": owner["id"],
                             "name": rng.choice(PROJECT_NAMES), "visibility": g.wchoice(["private", "internal", "public"], [5, 4, 1]),
                             "created_at": created_at, "archived_at": archived, "_seq": len(projects)})
    projects.sort(key=lambda p: (p["created_at"], p["_seq"]))
    for i, p in enumerate(projects):
        p["id"] = i + 1
    R["projects"] = projects

    # ---- SSO connections ---------------------------------------------------------------------
    sso = []
    for o in orgs:
        plan = org_plan[o["id"]]
        if plan in (4, 6) and rng.random() < 0.7 and o["id"] not in late:
            created_at = o["created_at"] + timedelta(days=rng.randint(3, 120), hours=rng.randint(0, 9))
            if created_at >= (o["deleted_at"] or END):
                continue
            provider = g.wchoice(["okta", "azure_ad", "google_workspace", "onelogin", "jumpcloud"], [5, 4, 3, 1, 1])
            sso.append({"organization_id": o["id"], "provider": provider,
                        "protocol": "oidc" if provider == "google_workspace" else g.wchoice(["saml", "oidc"], [4, 1]),
                        "is_enforced": 1 if rng.random() < 0.5 else 0, "created_at": created_at, "disabled_at": o["deleted_at"]})
    # one organization switched identity provider: the old connection is disabled
    switcher = next((s for s in sso if s["provider"] == "okta" and s["disabled_at"] is None),
                    next(s for s in sso if s["disabled_at"] is None))
    switch_at = switcher["created_at"] + timedelta(days=300)
    sso.append({"organization_id": switcher["organization_id"], "provider": "azure_ad", "protocol": "saml",
                "is_enforced": 1, "created_at": switch_at, "disabled_at": None})
    switcher["disabled_at"] = switch_at + timedelta(hours=2)
    switcher["is_enforced"] = 0
    sso.sort(key=lambda s: (s["created_at"], s["organization_id"]))
    for i, s in enumerate(sso):
        s["id"] = i + 1
    R["sso_connections"] = sso
    org_sso: dict[int, list[dict]] = {}
    for s in sso:
        org_sso.setdefault(s["organization_id"], []).append(s)

    def sso_state(oid: int, at: datetime) -> int:
        """0 no SSO, 1 optional, 2 enforced."""
        for s in org_sso.get(oid, []):
            if s["created_at"] <= at and (s["disabled_at"] is None or s["disabled_at"] > at):
                return 2 if s["is_enforced"] else 1
        return 0

    # ---- MFA enrollments ----------------------------------------------------------------------
    mfa = []
    security_orgs = {u["organization_id"] for u in users if 4 in held[u["id"]]}
    for u in loggable:
        start, end = window(u)
        p = 0.35 + (0.25 if u["organization_id"] in security_orgs else 0) + (0.15 if org_plan[u["organization_id"]] == 6 else 0)
        if rng.random() >= p or end - start < timedelta(days=3):
            continue
        methods = [g.wchoice(["totp", "webauthn", "sms", "email"], [55, 20, 20, 5])]
        if rng.random() < 0.2:
            second = g.wchoice(["totp", "webauthn", "sms"], [3, 5, 2])
            if second != methods[0]:
                methods.append(second)
        t = g.skewed(start + timedelta(hours=1), end, 1.3)
        for k, method in enumerate(methods):
            enrolled = t if k == 0 else g.between(t, end)
            verified = enrolled + timedelta(seconds=rng.randint(40, 900)) if rng.random() < 0.9 else None
            if verified is not None and verified > end:
                verified = None
            disabled = g.between(verified, end) if verified is not None and rng.random() < 0.12 else None
            mfa.append({"user_id": u["id"], "method": method, "enrolled_at": enrolled, "verified_at": verified,
                        "disabled_at": disabled, "is_primary": 1 if k == 0 and verified is not None else 0})
    mfa.sort(key=lambda m: (m["enrolled_at"], m["user_id"], m["method"]))
    for i, m in enumerate(mfa):
        m["id"] = i + 1
    R["mfa_enrollments"] = mfa
    user_mfa: dict[int, list[dict]] = {}
    for m in mfa:
        user_mfa.setdefault(m["user_id"], []).append(m)

    def has_mfa(uid: int, at: datetime) -> bool:
        return any(m["verified_at"] is not None and m["verified_at"] <= at and (m["disabled_at"] is None or m["disabled_at"] > at)
                   for m in user_mfa.get(uid, []))

    # ---- devices and login attempts --------------------------------------------------------
    devices: list[dict] = []
    attempts: list[dict] = []
    user_devices: dict[int, list[dict]] = {}
    home_ips: dict[int, list[str]] = {}

    def add_attempt(**kw: Any) -> dict:
        row = {"user_id": None, "email_entered": None, "attempted_at": None, "success": 0, "failure_reason": None,
               "ip_address": None, "country_code": None, "device_id": None, "auth_method": "password", "_seq": len(attempts)}
        row.update(kw)
        attempts.append(row)
        return row

    def auth_method_for(u: dict, at: datetime) -> str:
        state = sso_state(u["organization_id"], at)
        if state == 2 or (state == 1 and rng.random() < 0.5):
            return "sso"
        return "magic_link" if rng.random() < 0.07 else "password"

    for u in loggable:
        start, end = window(u)
        if end <= start + timedelta(hours=1):
            continue
        days = (end - start).days + 1
        n = min(int(rng.lognormvariate(3.05, 0.85)), days * 2, 160)
        n = max(n, 1)
        times = sorted(g.between(start, end) for _ in range(n))
        cc = u["country_code"]
        home_ips[u["id"]] = [g.ip(cc) for _ in range(rng.randint(1, 3))]
        k_dev = g.wchoice([1, 2, 3, 4], [45, 35, 15, 5])
        devs = []
        for k in range(k_dev):
            dtype = g.wchoice(["desktop", "mobile", "tablet"], [6, 3, 1]) if k else "desktop"
            if dtype == "desktop":
                os_name = g.wchoice(["macOS", "Windows", "Linux", "ChromeOS"], [45, 45, 7, 3])
                browser = g.wchoice(["Chrome", "Firefox", "Safari", "Edge"], [55, 15, 20 if os_name == "macOS" else 0, 10 if os_name == "Windows" else 2])
            elif dtype == "mobile":
                os_name = g.wchoice(["iOS", "Android"], [55, 45])
                browser = g.wchoice(["Mobile App", "Safari" if os_name == "iOS" else "Chrome"], [6, 4])
            else:
                os_name = g.wchoice(["iPadOS", "Android"], [7, 3])
                browser = g.wchoice(["Mobile App", "Safari" if os_name == "iPadOS" else "Chrome"], [5, 5])
            first = times[0] if k == 0 else rng.choice(times)
            devs.append({"id": 0, "user_id": u["id"], "device_type": dtype, "os": os_name, "browser": browser,
                         "is_trusted": 1 if rng.random() < 0.4 else 0, "first_seen_at": first, "last_seen_at": first,
                         "_seq": len(devices)})
            devices.append(devs[-1])
        user_devices[u["id"]] = devs
        typo_rate = rng.choice([0.0, 0.02, 0.05, 0.08, 0.12, 0.2])
        for t in times:
            cands = [d for d in devs if d["first_seen_at"] <= t]
            dev = g.wchoice(cands, [5 if i == 0 else 2 for i in range(len(cands))])
            r = rng.random()
            if r < 0.85:
                ip, country = rng.choice(home_ips[u["id"]]), cc
            elif r < 0.96:
                ip, country = g.ip(cc), cc
            else:
                country = rng.choice(list(ORG_COUNTRY_WEIGHTS))
                ip = g.ip(country)
            if rng.random() < 0.02:
                country = None
            method = auth_method_for(u, t)
            if method == "password" and rng.random() < typo_rate:
                for j in range(1 if rng.random() < 0.8 else 2):
                    ft = t - timedelta(seconds=rng.randint(15, 150) * (j + 1))
                    reason = "invalid_password"
                    if has_mfa(u["id"], ft) and rng.random() < 0.3:
                        reason = "mfa_failed"
                    elif rng.random() < 0.03:
                        reason = "password_expired"
                    if ft > start:
                        add_attempt(user_id=u["id"], email_entered=u["email"], attempted_at=ft, failure_reason=reason,
                                    ip_address=ip, country_code=country, device_id=dev, auth_method="password", _kind="typo")
            add_attempt(user_id=u["id"], email_entered=u["email"], attempted_at=t, success=1, ip_address=ip,
                        country_code=country, device_id=dev if rng.random() > 0.06 else None, auth_method=method)

    # ---- brute-force bursts and blocks ----------------------------------------------------------
    blocks: list[dict] = []
    user_blocks: dict[int, list[dict]] = {}

    def free_interval(uid: int, a: datetime, b: datetime | None) -> bool:
        b = b or END + timedelta(days=1)
        for blk in user_blocks.get(uid, []):
            e = blk["unblocked_at"] or END + timedelta(days=1)
            if a < e + timedelta(hours=1) and blk["blocked_at"] < b + timedelta(hours=1):
                return False
        return True

    def add_block(uid: int, reason: str, at: datetime, by: int | None, until: datetime | None,
                  unby: int | None, notes: str | None) -> dict | None:
        if not free_interval(uid, at, until):
            return None
        blk = {"user_id": uid, "reason": reason, "notes": notes, "blocked_at": at, "blocked_by": by,
               "unblocked_at": until, "unblocked_by": unby}
        blocks.append(blk)
        user_blocks.setdefault(uid, []).append(blk)
        return blk

    victims = rng.sample([u for u in loggable if u["deleted_at"] is None and u["created_at"] < END - timedelta(days=60)], 50)
    victims.sort(key=lambda u: u["id"])
    bursts: dict[int, list[dict]] = {}
    for v in victims:
        start, end = window(v)
        t = g.between(max(start + timedelta(days=2), START + timedelta(days=10)), end - timedelta(hours=6))
        n = rng.randint(6, 30)
        ips = [g.ip(c) for c in [rng.choice(ATTACK_COUNTRIES) for _ in range(rng.randint(1, 3))]]
        rows = []
        for _ in range(n):
            t += timedelta(seconds=rng.randint(4, 90))
            ip = rng.choice(ips)
            country = None
            for c in ATTACK_COUNTRIES:
                if c and int(ip.split(".")[0]) in IP_BLOCKS[c]:
                    country = c
                    break
            rows.append(add_attempt(user_id=v["id"], email_entered=v["email"], attempted_at=t, failure_reason="invalid_password",
                                    ip_address=ip, country_code=country, auth_method="password", _kind="burst"))
        bursts[v["id"]] = rows

    auto_victims = [v for v in victims if len(bursts[v["id"]]) >= 12]
    never_block_ids = {v["id"] for v in sorted(auto_victims, key=lambda v: (-len(bursts[v["id"]]), v["id"]))[1:3]}
    auto_blocked = [v for v in auto_victims if v["id"] not in never_block_ids][: max(1, int(len(auto_victims) * 0.7))]
    for v in auto_blocked:
        last = bursts[v["id"]][-1]
        at = last["attempted_at"] + timedelta(seconds=1)
        if at > END - timedelta(days=40) or rng.random() < 0.15:
            until, unby = None, None
        elif rng.random() < 0.5:
            until, unby = at + timedelta(minutes=30), None
        else:
            admins = admins_at(v["organization_id"], at, exclude=v["id"])
            until = at + timedelta(minutes=rng.randint(20, 60 * 48))
            unby = rng.choice(admins) if admins else None
        blk = add_block(v["id"], "too_many_failed_logins", at, None, until, unby,
                        f"Automatically locked after {len(bursts[v['id']])} failed sign-in attempts")
        if blk is None:
            continue
        ip, country = last["ip_address"], last["country_code"]
        t = at
        for _ in range(rng.randint(1, 5)):
            t += timedelta(seconds=rng.randint(5, 60))
            if blk["unblocked_at"] is not None and t >= blk["unblocked_at"]:
                break
            add_attempt(user_id=v["id"], email_entered=v["email"], attempted_at=t, failure_reason="account_locked",
                        ip_address=ip, country_code=country, auth_method="password", _kind="locked")

    reasons = ["suspicious_activity", "compromised_credentials", "policy_violation", "payment_fraud"]
    pool = [u for u in loggable if not u["_owner"] and u["id"] not in never_block_ids and u["deleted_at"] is None]
    admin_targets = rng.sample(pool, 44)
    for u in admin_targets:
        start, end = window(u)
        if end - start < timedelta(days=10):
            continue
        at = g.between(start + timedelta(days=3), end - timedelta(hours=2))
        admins = admins_at(u["organization_id"], at, exclude=u["id"])
        if not admins:
            continue
        reason = g.wchoice(reasons, [45, 25, 20, 10])
        by = rng.choice(admins)
        if reason == "compromised_credentials":
            until = at + timedelta(minutes=rng.randint(60, 48 * 60))
        elif reason == "suspicious_activity":
            until = at + timedelta(minutes=rng.randint(60, 7 * 24 * 60)) if rng.random() < 0.6 else None
        elif reason == "policy_violation":
            until = at + timedelta(days=rng.randint(1, 30)) if rng.random() < 0.5 else None
        else:
            until = None
        if until is not None and until > END:
            until = None
        unby = rng.choice(admins_at(u["organization_id"], until, exclude=u["id"]) or [by]) if until else None
        note = rng.choice([None, None, "Reported by the user's manager.", "Login from an unusual location.",
                           "Credentials found in a public paste.", "Shared account detected.", "Pending HR review."])
        add_block(u["id"], reason, at, by, until, unby, note)

    # blocked twice (or three times): second block after the first one ended
    once = sorted((uid for uid, bl in user_blocks.items() if len(bl) == 1 and bl[0]["unblocked_at"] is not None))
    for k, uid in enumerate(rng.sample(once, min(14, len(once)))):
        u = user_by_id[uid]
        for round_ in range(2 if k == 0 else 1):
            prev = user_blocks[uid][-1]
            if prev["unblocked_at"] is None or prev["unblocked_at"] > END - timedelta(days=5):
                break
            at = g.between(prev["unblocked_at"] + timedelta(days=2), END - timedelta(days=1))
            admins = admins_at(u["organization_id"], at, exclude=uid)
            reason = g.wchoice(reasons, [5, 3, 2, 1])
            if rng.random() < 0.45 or round_ == 1 or not admins:
                until, unby = None, None
            else:
                until = at + timedelta(hours=rng.randint(2, 96))
                if until > END:
                    until = None
                unby = rng.choice(admins) if until else None
            add_block(uid, reason, at, rng.choice(admins) if admins else None, until, unby,
                      "Blocked again after a previous incident." if rng.random() < 0.5 else None)

    # offboarding blocks for some deactivated users
    deact = [u for u in users if u["status"] == "deactivated" and not u.get("_never") and u["organization_id"] not in closed]
    for u in rng.sample(deact, 10):
        at = u["deleted_at"] - timedelta(hours=rng.randint(1, 72))
        admins = admins_at(u["organization_id"], at, exclude=u["id"])
        if at > u["created_at"] and admins:
            add_block(u["id"], "offboarding", at, rng.choice(admins), None, None, "Employee left the company.")

    # attempts inside a blocked period: successes become 'account_locked' failures (or vanish)
    def blocked_at_time(uid: int, t: datetime) -> bool:
        return any(b["blocked_at"] <= t and (b["unblocked_at"] is None or t < b["unblocked_at"]) for b in user_blocks.get(uid, []))

    kept = []
    for a in attempts:
        if a["user_id"] is not None and a["user_id"] in user_blocks and a.get("_kind") not in ("burst", "locked") \
                and blocked_at_time(a["user_id"], a["attempted_at"]):
            if rng.random() < 0.3:
                a.update(success=0, failure_reason="account_locked", auth_method="password", _kind="locked")
                kept.append(a)
            continue
        kept.append(a)
    attempts[:] = kept

    # engineer the top of the failed-login ranking: the overall #1 is a blocked user, and the two
    # heaviest never-blocked targets tie for #1 among never-blocked users.
    fails: dict[int, int] = {}
    for a in attempts:
        if a["user_id"] is not None and a["success"] == 0:
            fails[a["user_id"]] = fails.get(a["user_id"], 0) + 1
    top_blocked = max((uid for uid in fails if uid in user_blocks and user_blocks[uid][0]["reason"] == "too_many_failed_logins"),
                      key=lambda uid: (fails[uid], -uid))
    tie_users = sorted(never_block_ids)
    others = max(c for uid, c in fails.items() if uid not in never_block_ids and uid != top_blocked)
    targets = {tie_users[0]: others + 3, tie_users[1]: others + 3, top_blocked: others + 9}

    for uid, target in targets.items():
        rows = bursts[uid]
        last = rows[-1]
        t = last["attempted_at"]
        extra = target - fails.get(uid, 0)
        for _ in range(extra):
            t += timedelta(seconds=rng.randint(4, 40))
            rows.append(add_attempt(user_id=uid, email_entered=last["email_entered"], attempted_at=t,
                                    failure_reason="invalid_password", ip_address=last["ip_address"],
                                    country_code=last["country_code"], auth_method="password", _kind="burst"))
        if uid == top_blocked:
            blk = user_blocks[uid][0]
            # shift the block after the extended burst
            shift = t + timedelta(seconds=1) - blk["blocked_at"]
            if shift > timedelta(0):
                blk["blocked_at"] += shift
                if blk["unblocked_at"] is not None:
                    blk["unblocked_at"] += shift
                for a in attempts:
                    if a["user_id"] == uid and a.get("_kind") == "locked":
                        a["attempted_at"] += shift
                blk["notes"] = f"Automatically locked after {len(rows)} failed sign-in attempts"

    # attempts for e-mail addresses that match no account
    stuffing_domains = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "proton.me", "icloud.com"]
    for _ in range(12):
        t = g.between(START + timedelta(days=5), END - timedelta(days=1))
        ips = [g.ip(c) for c in [rng.choice(ATTACK_COUNTRIES) for _ in range(rng.randint(1, 5))]]
        for _ in range(rng.randint(50, 140)):
            t += timedelta(seconds=rng.randint(1, 40))
            ip = rng.choice(ips)
            country = next((c for c in ATTACK_COUNTRIES if c and int(ip.split(".")[0]) in IP_BLOCKS[c]), None)
            if rng.random() < 0.3:
                email = f"{rng.choice(['admin', 'test', 'root', 'info', 'support', 'billing', 'it'])}@{rng.choice(orgs)['domain']}"
            else:
                email = f"{rng.choice(FIRST_NAMES).lower()}{rng.choice(['', '.', '_'])}{rng.choice(LAST_NAMES).lower().replace(' ', '').replace(chr(39), '').replace('ü', 'u')}{rng.randint(1, 99)}@{rng.choice(stuffing_domains)}"
            add_attempt(email_entered=email, attempted_at=t, failure_reason="unknown_user", ip_address=ip,
                        country_code=country, auth_method="password", _kind="unknown")
    all_emails = {u["email"] for u in users}
    success_rows = [a for a in attempts if a["success"] == 1]
    for _ in range(320):  # typos in the e-mail address just before a successful login
        a = rng.choice(success_rows)
        email = a["email_entered"]
        local, domain = email.split("@")
        pos = rng.randint(0, len(local) - 1)
        typo = rng.choice([local[:pos] + local[pos + 1:] + "@" + domain, local + "@" + domain.replace(".", "", 1),
                           local + "@" + domain + "m", local[:pos] + local[pos] * 2 + local[pos + 1:] + "@" + domain])
        if typo in all_emails or "@" not in typo:
            continue
        add_attempt(email_entered=typo, attempted_at=a["attempted_at"] - timedelta(seconds=rng.randint(10, 90)),
                    failure_reason="unknown_user", ip_address=a["ip_address"], country_code=a["country_code"],
                    auth_method="password", _kind="unknown")

    # clip to the data window, order and number
    attempts[:] = [a for a in attempts if START <= a["attempted_at"] <= END]
    attempts.sort(key=lambda a: (a["attempted_at"], a["_seq"]))
    for i, a in enumerate(attempts):
        a["id"] = i + 1
    # devices: number in order of first sighting, fill device ids and last_seen
    devices.sort(key=lambda d: (d["first_seen_at"], d["_seq"]))
    for i, d in enumerate(devices):
        d["id"] = i + 1
    for a in attempts:
        dev = a["device_id"]
        if isinstance(dev, dict):
            a["device_id"] = dev["id"]
            if a["success"] == 1 and a["attempted_at"] > dev["last_seen_at"]:
                dev["last_seen_at"] = a["attempted_at"]
            a["_dev"] = dev
    R["devices"] = devices
    R["login_attempts"] = attempts

    # ---- sessions -----------------------------------------------------------------------------------
    sessions = []
    for a in attempts:
        if a["success"] != 1:
            continue
        uid = a["user_id"]
        u = user_by_id[uid]
        start = a["attempted_at"]
        last_seen = start + timedelta(seconds=int(rng.lognormvariate(7.5, 1.1)))
        limit = u["deleted_at"] or END
        ended, reason = None, None
        next_block = min((b["blocked_at"] for b in user_blocks.get(uid, []) if b["blocked_at"] > start), default=None)
        if next_block is not None and next_block < last_seen + timedelta(minutes=30):
            last_seen = min(last_seen, next_block)
            ended, reason = next_block, "revoked"
        elif last_seen >= limit:
            last_seen = limit
            if u["deleted_at"] is not None:
                ended, reason = limit, "revoked"
        elif start > END - timedelta(days=3) and rng.random() < 0.6:
            pass
        else:
            r = rng.random()
            if r < 0.42:
                ended, reason = last_seen, "logout"
            elif r < 0.96:
                ended, reason = last_seen + timedelta(minutes=30), "expired"
            else:
                ended, reason = last_seen + timedelta(seconds=rng.randint(60, 3600)), "revoked"
            if ended > END:
                ended, reason = None, None
        if ended is None and u["deleted_at"] is None and blocked_at_time(uid, END):
            ended, reason = last_seen, "revoked"
        dev = a.get("_dev")
        if dev is not None and last_seen > dev["last_seen_at"]:
            dev["last_seen_at"] = last_seen
        sessions.append({"id": len(sessions) + 1, "user_id": uid, "login_attempt_id": a["id"], "device_id": a["device_id"],
                         "ip_address": a["ip_address"], "started_at": start, "last_seen_at": last_seen,
                         "ended_at": ended, "end_reason": reason})
    R["sessions"] = sessions
    last_login: dict[int, datetime] = {}
    for a in attempts:
        if a["success"] == 1:
            last_login[a["user_id"]] = a["attempted_at"]
    for u in users:
        u["last_login_at"] = last_login.get(u["id"])
        if u["status"] == "active" and blocked_at_time(u["id"], END):
            u["status"] = "suspended"

    blocks.sort(key=lambda b: (b["blocked_at"], b["user_id"]))
    for i, b in enumerate(blocks):
        b["id"] = i + 1
    R["blocks"] = blocks

    # ---- password resets -------------------------------------------------------------------------
    resets = []

    def add_reset(u: dict, at: datetime, by: str, ip: str, p_complete: float) -> None:
        if at > END or at < START:
            return
        done = at + timedelta(seconds=rng.randint(60, 3000)) if rng.random() < p_complete else None
        if done is not None and done > END:
            done = None
        resets.append({"user_id": u["id"], "requested_at": at, "expires_at": at + timedelta(hours=1), "completed_at": done,
                       "initiated_by": by, "request_ip": ip, "_seq": len(resets)})

    for a in attempts:
        if a.get("_kind") == "typo" and rng.random() < 0.15:
            add_reset(user_by_id[a["user_id"]], a["attempted_at"] + timedelta(seconds=rng.randint(20, 200)), "user", a["ip_address"], 0.8)
    for b in blocks:
        u = user_by_id[b["user_id"]]
        ip = rng.choice(home_ips.get(u["id"], [g.ip(u["country_code"])]))
        if b["reason"] == "compromised_credentials":
            add_reset(u, b["blocked_at"] + timedelta(minutes=rng.randint(2, 20)), "admin", g.ip(org_by_id[u["organization_id"]]["country_code"]), 0.85)
        elif b["reason"] == "too_many_failed_logins" and b["unblocked_at"] is not None and rng.random() < 0.5:
            add_reset(u, b["unblocked_at"] + timedelta(minutes=rng.randint(1, 30)), "user", ip, 0.9)
    # a breach-response forced reset for every user of two organizations
    breach_at = datetime(2024, 3, 14, 9, 0, 0)
    breach_orgs = [o["id"] for o in orgs if o["created_at"] < breach_at - timedelta(days=90) and o["deleted_at"] is None][2:4]
    for oid in breach_orgs:
        for u in org_users[oid]:
            if u.get("_never") or u["created_at"] > breach_at or (u["deleted_at"] and u["deleted_at"] < breach_at):
                continue
            resets.append({"user_id": u["id"], "requested_at": breach_at, "expires_at": breach_at + timedelta(hours=1),
                           "completed_at": breach_at + timedelta(seconds=rng.randint(120, 3500)) if rng.random() < 0.7 else None,
                           "initiated_by": "system", "request_ip": "10.0.0.5", "_seq": len(resets)})
    for _ in range(260):
        u = rng.choice(loggable)
        start, end = window(u)
        if end - start < timedelta(days=1):
            continue
        add_reset(u, g.between(start, end), "user", rng.choice(home_ips.get(u["id"], [g.ip(u["country_code"])])), 0.6)
    resets.sort(key=lambda r: (r["requested_at"], r["_seq"]))
    for i, r in enumerate(resets):
        r["id"] = i + 1
    R["password_resets"] = resets

    # ---- API keys and requests ---------------------------------------------------------------------
    api_keys = []
    used_prefixes: set[str] = set()
    for o in orgs:
        if org_plan[o["id"]] == 1 or rng.random() < 0.25:
            continue
        o_end = o["deleted_at"] or END
        creators = [u for u in org_users[o["id"]] if not u.get("_never") and (5 in held[u["id"]] or 2 in held[u["id"]] or u["_owner"])]
        for _ in range(rng.randint(1, 7)):
            cu = rng.choice(creators)
            u_end = cu["deleted_at"] or o_end
            if u_end - cu["created_at"] < timedelta(days=2):
                continue
            created_at = g.between(cu["created_at"] + timedelta(days=1), u_end)
            env = "live" if rng.random() < 0.7 else "test"
            prefix = ""
            while not prefix or prefix in used_prefixes:
                prefix = f"sk_{env}_" + "".join(rng.choice("0123456789abcdef") for _ in range(4))
            used_prefixes.add(prefix)
            expires = created_at + timedelta(days=365) if rng.random() < 0.4 else None
            revoked = g.between(created_at + timedelta(days=1), o_end) if rng.random() < 0.22 else None
            if o["deleted_at"] is not None and revoked is None:
                revoked = o["deleted_at"]
            if revoked is not None and revoked > END:
                revoked = None
            api_keys.append({"organization_id": o["id"], "created_by_user_id": cu["id"],
                             "name": rng.choice(["CI pipeline", "Zapier", "Data warehouse sync", "Reporting script",
                                                  "Backup job", "Mobile backend", "Terraform", "Staging tests",
                                                  "BI dashboard", "Slack bot"]),
                             "key_prefix": prefix, "environment": env,
                             "scope": g.wchoice(["read", "write", "admin"], [5, 4, 1]), "created_at": created_at,
                             "expires_at": expires, "last_used_at": None, "revoked_at": revoked, "_seq": len(api_keys)})
    api_keys.sort(key=lambda k: (k["created_at"], k["_seq"]))
    for i, k in enumerate(api_keys):
        k["id"] = i + 1
    R["api_keys"] = api_keys
    requests = []
    weights = [rng.lognormvariate(0, 1.2) if rng.random() < 0.78 else 0.0 for _ in api_keys]
    total_w = sum(weights)
    ep_items = [(m, p) for m, p, _ in API_ENDPOINTS]
    ep_weights = [w for _, _, w in API_ENDPOINTS]
    for k, w in zip(api_keys, weights):
        if w == 0:
            continue
        n = max(1, int(10500 * w / total_w))
        stop = min(x for x in (k["revoked_at"], k["expires_at"], END) if x is not None)
        if stop <= k["created_at"]:
            continue
        times = [g.between(k["created_at"], stop) for _ in range(n)]
        after = []
        if k["revoked_at"] is not None and rng.random() < 0.4 and k["revoked_at"] < END - timedelta(days=1):
            after = [g.between(k["revoked_at"], min(END, k["revoked_at"] + timedelta(days=30))) for _ in range(rng.randint(2, 8))]
        for t in sorted(times) + sorted(after):
            method, path = g.wchoice(ep_items, ep_weights)
            revoked_now = t in after
            if revoked_now:
                status = 401
            elif method != "GET" and k["scope"] == "read":
                status = 403
            else:
                status = g.wchoice([200, 201, 400, 404, 429, 500, 503],
                                   [85 if method != "POST" else 10, 75 if method == "POST" else 0, 3, 3, 3, 1, 0.5])
            latency = int(rng.lognormvariate(4.6, 0.6)) + (rng.randint(800, 5000) if status >= 500 else 0)
            size = 0 if method == "DELETE" or status in (401, 403, 429) else int(rng.lognormvariate(7.5, 1.0))
            requests.append({"api_key_id": k["id"], "requested_at": t, "http_method": method, "endpoint": path,
                             "status_code": status, "latency_ms": latency, "response_bytes": size, "_seq": len(requests)})
            if k["last_used_at"] is None or t > k["last_used_at"]:
                k["last_used_at"] = t
    requests.sort(key=lambda r: (r["requested_at"], r["_seq"]))
    for i, r in enumerate(requests):
        r["id"] = i + 1
    R["api_requests"] = requests

    # ---- webhooks ----------------------------------------------------------------------------------
    webhooks = []
    key_orgs = sorted({k["organization_id"] for k in api_keys})
    for oid in key_orgs:
        o = org_by_id[oid]
        first_key = min(k["created_at"] for k in api_keys if k["organization_id"] == oid)
        for _ in range(g.wchoice([0, 1, 2, 3], [3, 4, 2, 1])):
            created_at = g.between(first_key, o["deleted_at"] or END)
            active = 0 if o["deleted_at"] is not None else (1 if rng.random() < 0.8 else 0)
            never = rng.random() < 0.1
            if never:
                last, code, fails_n = None, None, 0
            else:
                last = g.between(created_at, o["deleted_at"] or END)
                if active:
                    code = g.wchoice([200, 204, 500, 503], [80, 8, 7, 5])
                    fails_n = 0 if code < 300 else rng.randint(1, 20)
                else:
                    code = g.wchoice([200, 404, 410, 500], [3, 3, 2, 2])
                    fails_n = 0 if code < 300 else rng.randint(20, 150)
            events = sorted(rng.sample(WEBHOOK_EVENTS, rng.randint(1, 4)), key=WEBHOOK_EVENTS.index)
            path = rng.choice(["/webhooks/tasklane", "/hooks/incoming", "/api/events", "/integrations/tasklane"])
            webhooks.append({"organization_id": oid, "url": f"https://{rng.choice(['api', 'hooks', 'integrations'])}.{o['domain']}{path}",
                             "event_types": ",".join(events), "is_active": active, "created_at": created_at,
                             "last_delivery_at": last, "last_status_code": code, "consecutive_failures": fails_n, "_seq": len(webhooks)})
    webhooks.sort(key=lambda w: (w["created_at"], w["_seq"]))
    for i, w in enumerate(webhooks):
        w["id"] = i + 1
    R["webhooks"] = webhooks

    # ---- subscriptions, invoices, payments ---------------------------------------------------------
    subs: list[dict] = []
    org_method: dict[int, str] = {}
    addon_orgs = {o["id"] for o in orgs if org_plan[o["id"]] in (4, 6) and rng.random() < 0.35}
    coupon_uses: dict[int, int] = {}

    def pick_coupon(at: datetime) -> int | None:
        if rng.random() > 0.3:
            return None
        ok = [c for c in COUPONS if c[8] <= at and (c[9] is None or at <= c[9]) and (c[10] is None or coupon_uses.get(c[0], 0) < c[10])
              and c[0] != 11]
        if not ok:
            return None
        cid = rng.choice(ok)[0]
        coupon_uses[cid] = coupon_uses.get(cid, 0) + 1
        return cid

    def period_end(start: datetime, interval: str) -> datetime:
        return add_months(start, 12 if interval == "annual" else 1)

    for o in orgs:
        oid = o["id"]
        final = org_plan[oid]
        n_seats = len([u for u in org_users[oid] if u["deleted_at"] is None]) + rng.randint(0, 4)
        plan_max = PLANS[final - 1][4]
        seats = min(n_seats, plan_max) if plan_max else n_seats
        history = []
        start = o["created_at"] + timedelta(minutes=35)
        if final != 1 and oid not in late and o["created_at"] < datetime(2024, 6, 1) and rng.random() < 0.3:
            lower = rng.choice([p for p in (1, 2, 3) if p < final] or [1])
            switch = g.between(start + timedelta(days=45), min(datetime(2025, 3, 1), (o["deleted_at"] or END) - timedelta(days=60)))
            history.append((lower, start, switch))
            start = switch
        history.append((final, start, None))
        for idx, (plan, s_start, s_end) in enumerate(history):
            is_last = idx == len(history) - 1
            interval = "monthly" if plan == 1 or rng.random() < 0.88 or (is_last and oid in past_due) else "annual"
            trial_end = s_start + timedelta(days=14) if plan != 1 and idx == 0 and rng.random() < 0.55 else None
            if oid in late and plan != 1:
                trial_end = s_start + timedelta(days=14)
            status, canceled, reason = "active", None, None
            if not is_last:
                status, canceled, reason = "canceled", s_end, "upgraded"
            elif o["deleted_at"] is not None:
                status, canceled = "canceled", o["deleted_at"] - timedelta(days=rng.randint(0, 20))
                reason = rng.choice(["company_closed", "switched_competitor"])
            elif oid in churned:
                status = "canceled"
                canceled = g.between(max(s_start + timedelta(days=90), datetime(2024, 1, 1)), END - timedelta(days=10))
                reason = g.wchoice(["too_expensive", "switched_competitor", "missing_features", "non_payment"], [4, 3, 2, 2])
                if oid == churned[0]:  # make sure one customer churned because it stopped paying
                    reason = "non_payment"
            elif oid in past_due:
                status = "past_due"
            elif trial_end is not None and trial_end > END:
                status = "trialing"
            sub = {"organization_id": oid, "plan_id": plan, "coupon_id": pick_coupon(s_start) if plan != 1 else None,
                   "status": status, "billing_interval": interval,
                   "seats": min(seats if is_last else max(1, seats - rng.randint(0, 3)), PLANS[plan - 1][4] or 10**6),
                   "started_at": s_start, "trial_ends_at": trial_end, "current_period_end": None,
                   "canceled_at": canceled, "cancel_reason": reason, "_seq": len(subs)}
            # billing periods
            bill_start = trial_end or s_start
            stop = canceled or END
            p = bill_start
            periods = []
            while p < stop:
                periods.append(p)
                p = period_end(p, interval)
            sub["current_period_end"] = p if periods else (trial_end or period_end(bill_start, interval))
            if status == "canceled" and reason == "upgraded":
                sub["current_period_end"] = canceled
            sub["_periods"] = periods
            subs.append(sub)
        cur = COUNTRY[o["country_code"]][3]
        if cur == "EUR":
            org_method[oid] = g.wchoice(["card", "sepa_debit", "paypal"], [55, 40, 5])
        elif cur == "GBP":
            org_method[oid] = g.wchoice(["card", "paypal", "wire_transfer"], [75, 15, 10])
        else:
            org_method[oid] = g.wchoice(["card", "ach_debit", "wire_transfer", "paypal"], [65, 15, 12, 8])
    subs.sort(key=lambda s: (s["started_at"], s["_seq"]))
    for i, s in enumerate(subs):
        s["id"] = i + 1
    R["subscriptions"] = subs

    def unit_price(plan: int, interval: str, cur: str) -> int:
        if cur == "USD":
            return PLANS[plan - 1][2] if interval == "monthly" else PLANS[plan - 1][3]
        monthly = LOCAL_MONTHLY[cur][plan]
        if interval == "monthly":
            return monthly
        return PLANS[plan - 1][3] if cur == "EUR" else monthly * 10

    invoices, items, payments = [], [], []
    for s in subs:
        if s["plan_id"] == 1:
            continue
        o = org_by_id[s["organization_id"]]
        cur = COUNTRY[o["country_code"]][3]
        vat = COUNTRY[o["country_code"]][4]
        coupon = COUPONS[s["coupon_id"] - 1] if s["coupon_id"] else None
        for n_period, p_start in enumerate(s["_periods"]):
            p_end = period_end(p_start, s["billing_interval"])
            lines = []
            unit = unit_price(s["plan_id"], s["billing_interval"], cur)
            lines.append(("subscription", f"{PLAN_NAME[s['plan_id']]} plan, {s['seats']} seats ({s['billing_interval']})", s["seats"], unit))
            if o["id"] in addon_orgs:
                addon = {"USD": 4900, "EUR": 4900, "GBP": 3900}[cur] * (10 if s["billing_interval"] == "annual" else 1)
                lines.append(("add_on", "Advanced Security add-on", 1, addon))
            if s["billing_interval"] == "monthly" and rng.random() < 0.12 and any(k["organization_id"] == o["id"] for k in api_keys):
                lines.append(("overage", "API overage (per 1,000 calls)", rng.randint(1, 40), {"USD": 50, "EUR": 50, "GBP": 40}[cur]))
            positive = sum(q * u_ for _, _, q, u_ in lines)
            if coupon is not None:
                applies = (coupon[6] == "forever" or (coupon[6] == "once" and n_period == 0)
                           or (coupon[6] == "repeating" and (n_period < (coupon[7] or 0) if s["billing_interval"] == "monthly" else n_period == 0)))
                if applies:
                    off = positive * coupon[3] // 100 if coupon[3] else min(coupon[4], positive)
                    lines.append(("discount", f"Coupon {coupon[1]}", 1, -off))
            extra = []
            if s["billing_interval"] == "monthly" and rng.random() < 0.2 and n_period > 0:
                q = rng.randint(1, 5)
                extra.append(p_start + timedelta(days=rng.randint(5, 20)))
            issued = p_start + timedelta(minutes=rng.randint(1, 50))
            docs = [(issued, p_start, lines)]
            if extra and extra[0] + timedelta(hours=1) < END:
                docs.append((extra[0], extra[0], [("subscription", f"Additional seats (prorated), {q} seats", q, unit // 2)]))
            for d_issued, d_start, d_lines in docs:
                if rng.random() < 0.015:  # a voided duplicate, reissued right after
                    invoices.append(_invoice(s, cur, vat, d_start, p_end, d_issued - timedelta(minutes=5), d_lines, "void", None, len(invoices)))
                status, paid_at = "paid", None
                interval_days = 14 if s["billing_interval"] == "monthly" else 30
                delay = timedelta(minutes=rng.randint(1, 30)) if org_method[o["id"]] in ("card", "paypal", "sepa_debit") else timedelta(days=rng.randint(1, interval_days + 4))
                paid_at = d_issued + delay
                if s["status"] == "past_due" and d_issued > END - timedelta(days=40):
                    status, paid_at = "open", None
                elif s["cancel_reason"] == "non_payment" and d_issued > s["canceled_at"] - timedelta(days=62):
                    status, paid_at = "uncollectible", None
                elif paid_at > END:
                    status, paid_at = "open", None
                invoices.append(_invoice(s, cur, vat, d_start, p_end, d_issued, d_lines, status, paid_at, len(invoices)))
    invoices.sort(key=lambda i: (i["issued_at"], i["_seq"]))
    year_seq: dict[int, int] = {}
    for i, inv in enumerate(invoices):
        inv["id"] = i + 1
        y = inv["issued_at"].year
        year_seq[y] = year_seq.get(y, 0) + 1
        inv["invoice_number"] = f"INV-{y}-{year_seq[y]:06d}"
        for item_type, desc, q, unit in inv["_lines"]:
            items.append({"id": len(items) + 1, "invoice_id": inv["id"], "item_type": item_type, "description": desc,
                          "quantity": q, "unit_amount_cents": unit, "amount_cents": q * unit})
    R["invoices"], R["invoice_items"] = invoices, items

    for inv in invoices:
        if inv["status"] == "void":
            continue
        method = org_method[inv["organization_id"]]
        brand = g.wchoice(["visa", "mastercard", "amex"], [55, 35, 10]) if method == "card" else None

        def pay(at: datetime, status: str, code: str | None) -> None:
            payments.append({"invoice_id": inv["id"], "amount_cents": inv["total_cents"], "currency": inv["currency"],
                             "payment_method": method, "card_brand": brand, "status": status, "failure_code": code,
                             "created_at": at, "_seq": len(payments)})

        fail_codes = ["card_declined", "insufficient_funds", "expired_card", "processing_error"] if method == "card" \
            else ["insufficient_funds", "processing_error"]
        if inv["status"] == "paid":
            if rng.random() < 0.07 and inv["paid_at"] - inv["issued_at"] > timedelta(minutes=2):
                pay(inv["issued_at"] + timedelta(seconds=30), "failed", rng.choice(fail_codes))
            pay(inv["paid_at"], "succeeded", None)
        elif inv["status"] in ("open", "uncollectible"):
            if inv["due_at"] < END or inv["status"] == "uncollectible":
                t = inv["issued_at"]
                for _ in range(rng.randint(1, 3) if inv["status"] == "open" else 3):
                    t += timedelta(days=rng.randint(1, 5), seconds=rng.randint(0, 3600))
                    if t > END:
                        break
                    pay(t, "failed", rng.choice(fail_codes))
            elif method in ("sepa_debit", "ach_debit", "wire_transfer") and rng.random() < 0.6:
                pay(min(END, inv["issued_at"] + timedelta(hours=rng.randint(1, 72))), "pending", None)
    payments.sort(key=lambda p: (p["created_at"], p["_seq"]))
    for i, p in enumerate(payments):
        p["id"] = i + 1
    R["payments"] = payments
    refunds = []
    succeeded = [p for p in payments if p["status"] == "succeeded" and p["created_at"] < END - timedelta(days=3)]
    for p in sorted(rng.sample(succeeded, 46), key=lambda p: p["id"]):
        reason = g.wchoice(["requested_by_customer", "duplicate", "fraudulent", "service_outage"], [50, 15, 8, 27])
        if reason in ("duplicate", "fraudulent") or rng.random() < 0.35:
            amount = p["amount_cents"]
        elif reason == "service_outage":
            amount = max(100, p["amount_cents"] // 10)
        else:
            amount = max(100, int(p["amount_cents"] * rng.uniform(0.2, 0.8)))
        refunds.append({"payment_id": p["id"], "amount_cents": amount, "reason": reason,
                        "created_at": g.between(p["created_at"] + timedelta(hours=2), min(END, p["created_at"] + timedelta(days=60))),
                        "_seq": len(refunds)})
    refunds.sort(key=lambda r: (r["created_at"], r["_seq"]))
    for i, r in enumerate(refunds):
        r["id"] = i + 1
    R["refunds"] = refunds

    # ---- support tickets ------------------------------------------------------------------------------
    tickets, comments = [], []
    agents = R["support_agents"]

    def agent_for(category: str, at: datetime) -> int:
        queue = {"billing": "billing", "security": "security", "account_access": "security"}.get(category, "technical")
        ok = [a for a in agents if a["team"] == queue and a["hired_at"] <= at and (a["is_active"] or at < datetime(2024, 6, 1))]
        return rng.choice(ok)["id"]

    def add_ticket(u: dict, at: datetime, category: str, subject: str | None = None) -> None:
        age = END - at
        if age < timedelta(days=3):
            status = g.wchoice(["open", "pending", "solved"], [5, 3, 2])
        elif age < timedelta(days=14):
            status = g.wchoice(["open", "pending", "solved"], [2, 2.5, 5.5])
        else:
            status = g.wchoice(["solved", "closed", "open", "pending"], [35, 60, 3, 2])
        priority = g.wchoice(["low", "normal", "high", "urgent"], [15, 55, 22, 8] if category not in ("security", "account_access") else [3, 30, 45, 22])
        hours = rng.lognormvariate(1.2 if priority in ("high", "urgent") else 2.2, 0.9)
        first = at + timedelta(minutes=int(hours * 60) + 3)
        if (status == "open" and age < timedelta(days=3) and rng.random() < 0.5) or first > END:
            first = None
        assignee = agent_for(category, at) if first is not None or rng.random() < 0.4 else None
        if first is not None and assignee is None:
            assignee = agent_for(category, at)
        resolved = None
        if status in ("solved", "closed"):
            if first is None:
                first = at + timedelta(minutes=30)
                assignee = assignee or agent_for(category, at)
            resolved = first + timedelta(minutes=int(rng.lognormvariate(5.5, 1.3)))
            if resolved > END:
                resolved = END - timedelta(minutes=rng.randint(1, 600))
                if resolved <= first:
                    resolved = first + timedelta(minutes=1)
        csat = None
        if resolved is not None and rng.random() < 0.45:
            csat = g.wchoice([1, 2, 3, 4, 5], [6, 7, 12, 30, 45])
        tickets.append({"organization_id": u["organization_id"], "requester_user_id": u["id"], "assignee_agent_id": assignee,
                        "subject": subject or rng.choice(TICKET_SUBJECTS[category]), "category": category, "priority": priority,
                        "status": status, "created_at": at, "first_response_at": first, "resolved_at": resolved,
                        "satisfaction_score": csat, "_seq": len(tickets)})

    cats = list(TICKET_SUBJECTS)
    cat_w = {"billing": 18, "bug": 22, "account_access": 12, "security": 9, "feature_request": 12, "how_to": 27}
    billing_people = [u for u in loggable if (3 in held[u["id"]] or u["_owner"])]
    for _ in range(860):
        category = g.wchoice(cats, [cat_w[c] for c in cats])
        u = rng.choice(billing_people if category == "billing" and rng.random() < 0.7 else loggable)
        start, end = window(u)
        if end - start < timedelta(days=1):
            continue
        add_ticket(u, g.between(start + timedelta(hours=1), end), category)
    for b in blocks:  # locked-out users ask for help
        if rng.random() < 0.45 and b["blocked_at"] < END - timedelta(hours=2):
            u = user_by_id[b["user_id"]]
            if u["deleted_at"] is not None and u["deleted_at"] < b["blocked_at"] + timedelta(hours=2):
                continue
            add_ticket(u, b["blocked_at"] + timedelta(minutes=rng.randint(10, 120)), "account_access",
                       rng.choice(["I am locked out of my account", "Account blocked, please unblock"]))
    tickets.sort(key=lambda t: (t["created_at"], t["_seq"]))
    for i, t in enumerate(tickets):
        t["id"] = i + 1
        convo = [(t["created_at"], t["requester_user_id"], None, rng.choice(TICKET_BODIES), 0)]
        if t["first_response_at"] is not None:
            convo.append((t["first_response_at"], None, t["assignee_agent_id"], rng.choice(AGENT_REPLIES), 0))
            stop = t["resolved_at"] or END
            cur_t = t["first_response_at"]
            for k in range(rng.randint(0, 3)):
                cur_t = cur_t + timedelta(minutes=rng.randint(10, 2000))
                if cur_t >= stop:
                    break
                if k % 2 == 0:
                    convo.append((cur_t, t["requester_user_id"], None, rng.choice(CUSTOMER_REPLIES), 0))
                else:
                    convo.append((cur_t, None, t["assignee_agent_id"], rng.choice(AGENT_REPLIES), 0))
            if rng.random() < 0.18:
                note_t = t["first_response_at"] + timedelta(minutes=rng.randint(1, 30))
                if note_t < stop:
                    convo.append((note_t, None, t["assignee_agent_id"], rng.choice(INTERNAL_NOTES), 1))
        for when, uid, aid, body, internal in sorted(convo, key=lambda c: c[0]):
            comments.append({"ticket_id": t["id"], "author_user_id": uid, "author_agent_id": aid, "body": body,
                             "is_internal": internal, "created_at": when})
    comments.sort(key=lambda c: (c["created_at"], c["ticket_id"]))
    for i, c in enumerate(comments):
        c["id"] = i + 1
    R["support_tickets"], R["ticket_comments"] = tickets, comments

    # ---- feature flag overrides ------------------------------------------------------------------------
    overrides = []
    for f in R["feature_flags"]:
        if f["archived_at"] is not None and f["key"] != "legacy_reports":
            continue
        live_orgs = [o for o in orgs if o["created_at"] < END - timedelta(days=10)]
        for o in sorted(rng.sample(live_orgs, rng.randint(2, 14)), key=lambda o: o["id"]):
            a = max(f["created_at"], o["created_at"])
            b = min(f["archived_at"] or END, o["deleted_at"] or END)
            if b <= a:
                continue
            at = g.between(a, b)
            admins = admins_at(o["id"], at)
            overrides.append({"feature_flag_id": f["id"], "organization_id": o["id"],
                              "enabled": (1 if rng.random() < 0.85 else 0) if not f["default_enabled"] else (0 if rng.random() < 0.8 else 1),
                              "set_at": at, "set_by_user_id": rng.choice(admins) if admins and rng.random() < 0.6 else None})
    R["feature_flag_overrides"] = overrides

    # ---- audit log -----------------------------------------------------------------------------------------
    events = []

    def ev(oid: int, actor: int | None, action: str, ttype: str, tid: int | None, at: datetime) -> None:
        if at < START or at > END:
            return
        ip = None
        if actor is not None:
            ip = rng.choice(home_ips.get(actor) or [g.ip(user_by_id[actor]["country_code"])])
        events.append({"organization_id": oid, "actor_user_id": actor, "action": action, "target_type": ttype,
                       "target_id": tid, "occurred_at": at, "ip_address": ip, "_seq": len(events)})

    for u in users:
        if not u["_owner"]:
            ev(u["organization_id"], owner_of[u["organization_id"]]["id"], "user.invited", "user", u["id"], u["created_at"])
        if u["deleted_at"] is not None:
            admins = admins_at(u["organization_id"], u["deleted_at"], exclude=u["id"])
            ev(u["organization_id"], rng.choice(admins) if admins else None, "user.deactivated", "user", u["id"], u["deleted_at"])
    for r in user_roles:
        if r["granted_by"] is not None and r["role_id"] not in (6, 7):
            ev(user_by_id[r["user_id"]]["organization_id"], r["granted_by"], "role.granted", "user", r["user_id"], r["granted_at"])
    for b in blocks:
        oid = user_by_id[b["user_id"]]["organization_id"]
        ev(oid, b["blocked_by"], "user.blocked", "user", b["user_id"], b["blocked_at"])
        if b["unblocked_at"] is not None:
            ev(oid, b["unblocked_by"], "user.unblocked", "user", b["user_id"], b["unblocked_at"])
    for k in api_keys:
        ev(k["organization_id"], k["created_by_user_id"], "api_key.created", "api_key", k["id"], k["created_at"])
        if k["revoked_at"] is not None:
            admins = admins_at(k["organization_id"], k["revoked_at"])
            ev(k["organization_id"], rng.choice(admins) if admins else None, "api_key.revoked", "api_key", k["id"], k["revoked_at"])
    for m in mfa:
        oid = user_by_id[m["user_id"]]["organization_id"]
        if m["verified_at"] is not None:
            ev(oid, m["user_id"], "mfa.enabled", "user", m["user_id"], m["verified_at"])
        if m["disabled_at"] is not None:
            ev(oid, m["user_id"], "mfa.disabled", "user", m["user_id"], m["disabled_at"])
    for r in resets:
        if r["completed_at"] is not None:
            ev(user_by_id[r["user_id"]]["organization_id"], r["user_id"], "password.changed", "user", r["user_id"], r["completed_at"])
    for s in sso:
        admins = admins_at(s["organization_id"], s["created_at"]) or [owner_of[s["organization_id"]]["id"]]
        ev(s["organization_id"], rng.choice(admins), "sso_connection.created", "sso_connection", s["id"], s["created_at"])
        if s["disabled_at"] is not None:
            ev(s["organization_id"], rng.choice(admins), "sso_connection.disabled", "sso_connection", s["id"], s["disabled_at"])
    for p in projects:
        ev(p["organization_id"], p["owner_user_id"], "project.created", "project", p["id"], p["created_at"])
        if p["archived_at"] is not None:
            ev(p["organization_id"], p["owner_user_id"], "project.archived", "project", p["id"], p["archived_at"])
    for w in webhooks:
        admins = admins_at(w["organization_id"], w["created_at"]) or [owner_of[w["organization_id"]]["id"]]
        ev(w["organization_id"], rng.choice(admins), "webhook.created", "webhook", w["id"], w["created_at"])
    for s in subs:
        if s["canceled_at"] is not None:
            ev(s["organization_id"], owner_of[s["organization_id"]]["id"] if s["cancel_reason"] != "non_payment" else None,
               "subscription.canceled", "subscription", s["id"], s["canceled_at"])
    for sess in sessions:
        if sess["end_reason"] == "revoked" and rng.random() < 0.5:
            u = user_by_id[sess["user_id"]]
            ev(u["organization_id"], None, "session.revoked", "user", u["id"], sess["ended_at"])
    filler = [("report.exported", "report", 32), ("settings.updated", "settings", 22), ("project.updated", "project", 30),
              ("user.profile_updated", "user", 16)]
    org_projects: dict[int, list[int]] = {}
    for p in projects:
        org_projects.setdefault(p["organization_id"], []).append(p["id"])
    actors = [u for u in loggable if u["id"] in last_login]
    while len(events) < 10200:
        u = rng.choice(actors)
        start, end = window(u)
        if end - start < timedelta(hours=2):
            continue
        action, ttype, _ = g.wchoice(filler, [f[2] for f in filler])
        at = g.between(start + timedelta(hours=1), end)
        if blocked_at_time(u["id"], at):
            continue
        if ttype == "project":
            if u["organization_id"] not in org_projects:
                continue
            tid = rng.choice(org_projects[u["organization_id"]])
        elif ttype == "user":
            tid = u["id"]
        elif ttype == "report":
            tid = rng.randint(1, 400)
        else:
            tid = None
        ev(u["organization_id"], u["id"], action, ttype, tid, at)
    events.sort(key=lambda e: (e["occurred_at"], e["_seq"]))
    for i, e in enumerate(events):
        e["id"] = i + 1
    R["audit_events"] = events
    return R


def _invoice(s: dict, cur: str, vat: float, p_start: datetime, p_end: datetime, issued: datetime,
             lines: list, status: str, paid_at: datetime | None, seq: int) -> dict:
    subtotal = sum(q * u for _, _, q, u in lines)
    tax = int(subtotal * vat + 0.5)
    due = issued + timedelta(days=14 if s["billing_interval"] == "monthly" else 30)
    return {"organization_id": s["organization_id"], "subscription_id": s["id"], "invoice_number": None, "status": status,
            "currency": cur, "period_start": p_start, "period_end": p_end, "issued_at": issued, "due_at": due,
            "subtotal_cents": subtotal, "tax_cents": tax, "total_cents": subtotal + tax, "paid_at": paid_at,
            "_lines": lines, "_seq": seq}


# --------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return ts(v)
    return v


def build_database(out_path: Path | None = None, *, schema_dir: Path | None = None, seed: int = 7) -> Path:
    """Create the SQLite file (atomically) and return its path."""
    out = Path(out_path) if out_path is not None else DEFAULT_OUT
    tables = load_schema(schema_dir)
    by_name = {t["name"]: t for t in tables}
    order = creation_order(tables)
    rows = generate(seed)
    missing = sorted(set(by_name) - set(rows))
    unknown = sorted(set(rows) - set(by_name))
    if missing or unknown:
        raise ValueError(f"schema/generator mismatch: no rows for {missing}, no schema for {unknown}")

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        tmp.unlink()
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA foreign_keys=ON")
            for name in order:
                conn.execute(table_ddl(by_name[name]))
            for name in order:
                columns = [c["name"] for c in by_name[name]["columns"]]
                wanted = set(columns)
                data = []
                for r in rows[name]:
                    keys = {k for k in r if not k.startswith("_")}
                    if keys != wanted:
                        raise ValueError(f"{name}: row keys {sorted(keys ^ wanted)} differ from the schema")
                    data.append(tuple(_value(r[c]) for c in columns))
                placeholders = ", ".join("?" for _ in columns)
                conn.executemany(f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({placeholders})", data)
            conn.commit()
            problems = conn.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise ValueError(f"foreign key violations: {problems[:5]}")
            conn.execute("VACUUM")
        finally:
            conn.close()
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the bundled saas demo SQLite database.")
    parser.add_argument("--out", type=Path, default=None, help=f"output file (default: {DEFAULT_OUT})")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default: 7)")
    parser.add_argument("--schema-dir", type=Path, default=None, help="folder of table YAML files")
    args = parser.parse_args(argv)
    path = build_database(args.out, schema_dir=args.schema_dir, seed=args.seed)
    print(path)
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for name in names:
            count = conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
            print(f"{name:24s} {count:>7d}")
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
