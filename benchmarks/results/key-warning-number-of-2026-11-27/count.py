"""Answers to "number of" questions (no other id word) whose SQL shows a key: what the key warning, silent there, would flag.

Run from benchmarks/results/ over every records.jsonl under it: python key-warning-number-of-2026-11-27/count.py
"""
import glob, json, re, sys
from text2sql_dspy.programs.db.query_warnings import _ASKS_FOR_KEYS, key_warnings
import sqlglot
from text2sql_dspy.programs.db.catalog import introspect_sqlite
cats = {}
def cat(db):
    if db not in cats:
        for base in ['../../../shared/benchmarks/spider-public/database', '../../../shared/benchmarks/bird-public/database']:
            p = f'{base}/{db}/{db}.sqlite'
            try:
                cats[db] = introspect_sqlite(p); break
            except Exception:
                cats[db] = None
    return cats[db]
n = hit = 0; seen = set(); out = []
for f in glob.glob('**/records.jsonl', recursive=True):
    for line in open(f):
        r = json.loads(line)
        q = r.get('question') or ''
        if not re.search(r'\bnumbers?\s+of\b', q, re.I):
            continue
        m = _ASKS_FOR_KEYS.findall(q)
        if any(w.lower() not in ('number', 'numbers') for w in m):
            continue
        c = cat(r.get('db_id'))
        if c is None or not r.get('query'):
            continue
        n += 1
        try:
            w = key_warnings(sqlglot.parse_one(r['query'], read='sqlite'), c)
        except Exception:
            continue
        if w:
            hit += 1; out.append((bool(r.get('correct')), q[:90], r['query'][:120], w[0][:80]))
print('answers to "number of" questions (no other id word):', n, 'that show a key:', hit)
import collections; print(collections.Counter(o[0] for o in out))
for o in out[:12]: print(o)
