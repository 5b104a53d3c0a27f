"""Pick a setting from phase-1 lines by the rule fixed before the run: the largest 10 mm
contrast (region '3') among settings whose G' median is within 0.4 points of the default's
and whose R is at least the default's minus 0.005; it must beat the default's 10 mm
contrast by at least 5 points, else nothing is picked. Prints the overrides JSON or ''."""
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
base = [r for r in rows if r["over"] == {}][0]["all"]
ok = [r for r in rows if r["over"] and r["all"]["med"] <= base["med"] + 0.4 and r["all"]["R"] >= base["R"] - 0.005]
best = max(ok, key=lambda r: r["all"]["c"]["3"], default=None)
print(json.dumps(best["over"]) if best and best["all"]["c"]["3"] >= base["c"]["3"] + 5 else "")
