"""Where a judge score (the judge model's probability that an answer is right) changes what the agents do."""

ACCEPT_SCORE = 0.7  # the V2 card's bar for "correct"; confidence bands and reports use it
# Below this the judge has rejected the query: it explains why, and V2 redrafts once from the facts.
# Set below the scores the embedded judge gives right answers.
LOW_SCORE = 0.35
