"""How often a query joins a table it never reads (its columns only in its own join's ON), in gold and in final answers."""
import glob, json, sys
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

def unused_joins(sql, dialect="sqlite"):
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return None
    found = []
    try:
        scopes = traverse_scope(tree)
    except Exception:
        return None
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        joins = select.args.get("joins") or []
        if not joins:
            continue
        own_on = {}
        for j in joins:
            if isinstance(j.this, exp.Table) and j.args.get("on") is not None and not (j.side or "").upper() in ("LEFT", "RIGHT", "FULL"):
                own_on[j.this.alias_or_name.lower()] = j
        dropped = set()
        changed = True
        while changed:
            changed = False
            for alias, j in own_on.items():
                if alias in dropped:
                    continue
                uses = 0
                for col in scope.columns:
                    if (col.table or "").lower() != alias:
                        continue
                    # inside its own ON, or inside a dropped join's ON: not a use
                    owner = col.find_ancestor(exp.Join)
                    if owner is j or (owner is not None and isinstance(owner.this, exp.Table) and owner.this.alias_or_name.lower() in dropped):
                        continue
                    uses += 1
                if uses == 0 and not any(c.table == "" for c in scope.columns if not isinstance(c.this, exp.Star)) :
                    dropped.add(alias); changed = True
        found += sorted(dropped)
    return found

gold_n = gold_hit = 0
stats = {True: [0, 0], False: [0, 0]}
seen_gold = set(); examples = []
for f in sys.argv[1:]:
    for line in open(f):
        r = json.loads(line)
        if "correct" not in r:
            continue
        g = r.get("gold") or ""
        if g and g not in seen_gold:
            seen_gold.add(g); u = unused_joins(g)
            if u is not None:
                gold_n += 1; gold_hit += bool(u)
                if u and len(examples) < 6: examples.append(("GOLD", g[:160], u))
        q = r.get("query") or ""
        if q:
            u = unused_joins(q)
            if u is None: continue
            s = stats[bool(r["correct"])]
            s[0] += 1; s[1] += bool(u)
print(f"gold queries {gold_n}, with an unused join {gold_hit}")
for ok in (True, False):
    n, h = stats[ok]
    print(f"final answers {'right' if ok else 'wrong'}: {n}, with an unused join {h} ({h / max(n, 1):.1%})")
for e in examples: print(e)
