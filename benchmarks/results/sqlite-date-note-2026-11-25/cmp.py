import json,sys
a=[json.loads(l) for l in open(f'/work/dev/{sys.argv[1]}.jsonl')]
b=[json.loads(l) for l in open(f'/work/dev/{sys.argv[2]}.jsonl')]
n=min(len(a),len(b)); a,b=a[:n],b[:n]
g=sum(1 for x,y in zip(a,b) if y['match'] and not x['match']); l=sum(1 for x,y in zip(a,b) if x['match'] and not y['match'])
import statistics as st
print(n, sum(x['match'] for x in a), sum(x['match'] for x in b), 'gained',g,'lost',l, 'lat', round(st.median(x['lat'] for x in a),1), round(st.median(x['lat'] for x in b),1))
