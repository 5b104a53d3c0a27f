"""Rule fixed before the run (tenth session): the jump pressure (pde="navierj") passes on the
tuning volume if, over clean seeds 0/1 and -20 dB seeds 0/1, its mean 10 mm contrast is at
least 5 points above the default's and its mean G' median at most 0.2 points above; or its
mean G' median is 0.4 points below the default's with mean R no more than 0.005 lower.
Default (fine.jsonl, aux.jsonl of this session): medians 2.74 2.75 3.88 3.71, R .925 .923
.916 .917, 10 mm contrast 67 65 57 58. Prints PASS or FAIL."""
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
rows = [r for r in rows if r["over"].get("pde") == "navierj" and "aux_network" not in r["over"] and "volume" in r["spec"]]
if len(rows) != 4:
    print("FAIL (rows: %d)" % len(rows)); sys.exit()
m = sum(r["all"]["med"] for r in rows) / 4; R = sum(r["all"]["R"] for r in rows) / 4
c = sum(r["all"]["c"]["3"] for r in rows) / 4
base_m, base_R, base_c = 3.27, 0.920, 61.75
ok = (c >= base_c + 5 and m <= base_m + 0.2) or (m <= base_m - 0.4 and R >= base_R - 0.005)
print("PASS" if ok else "FAIL", round(m, 3), round(R, 4), c)
