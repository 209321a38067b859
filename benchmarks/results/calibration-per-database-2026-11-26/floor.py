"""The ECE a perfectly calibrated probability shows on n answers: probabilities drawn around the accuracy
(normal, sd 0.2, clipped to 0.01-0.99), outcomes drawn from them, 2,000 times. Usage: python floor.py"""

import numpy as np

from text2sql_dspy.programs.calibration import expected_calibration_error

rng = np.random.default_rng(0)
for n in (60, 69, 129, 289):
    for accuracy in (0.6, 0.75):
        eces = []
        for _ in range(2000):
            p = np.clip(rng.normal(accuracy, 0.2, n), 0.01, 0.99)
            eces.append(expected_calibration_error(list(zip(p.tolist(), (rng.random(n) < p).tolist()))))
        eces = np.array(eces)
        print(f"n={n} accuracy {accuracy}: median ECE {np.median(eces):.3f}, P(ECE <= 0.05) = {(eces <= 0.05).mean():.2f}")
