import sys
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.db.source import open_source
from text2sql_dspy.programs.db.values import build_value_index, schema_words
from text2sql_dspy.programs.retrieval.schema_view import schema_view
data, split = sys.argv[1], sys.argv[2]
db = sys.argv[3] if len(sys.argv) > 3 else None
idx = {}
for i, ex in enumerate(load_split(data, split, databases=db)):
    src = open_source(ex.db_path)
    if ex.db_path not in idx: idx[ex.db_path] = build_value_index(src.database, src.catalog, progress=False)
    view = schema_view(src, ex.question, retrieval_type="keyword")
    for m in idx[ex.db_path].lookup(ex.question, tables=view.tables, names=schema_words(src.catalog)):
        print(i, ex.question[:70], '|', m.render())
