"""Where a judge score (the judge model's probability that an answer is right) changes what the agents do."""

ACCEPT_SCORE = 0.7  # the seeds' bar for "correct"; confidence bands and reports use it
# Below this the judge has rejected the query: it explains why, and V2 redrafts once from the facts.
# In benchmarks/bench_speed.py runs the embedded judge gave right Spider answers 0.44-0.68: at 0.5 it redrafted right ones.
LOW_SCORE = 0.35
