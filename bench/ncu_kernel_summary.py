"""Per-kernel time from `ncu --metrics gpu__time_duration.sum --print-summary per-kernel` logs:
the kernels by total time (invocations x average), for each log named."""
import re, sys
for name in sys.argv[1:]:
    text=open(name).read()
    cur=None; inv=None
    rows=[]
    for line in text.splitlines():
        m=re.match(r"\s{2}(\S.*?)\s+\((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\)",line)
        if m: cur=m.group(1)[:70]+" grid(%s,%s,%s)"%(m.group(2),m.group(3),m.group(4)); inv=None
        m2=re.search(r"Invocations\s+(\d+)",line)
        if m2: inv=int(m2.group(1))
        m3=re.match(r"\s+gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)\s+([\d.,]+)",line)
        if m3 and cur:
            avg=float(m3.group(4).replace(",",""))
            unit=m3.group(1)
            if unit=="ms": avg*=1000
            if unit=="ns": avg/=1000
            rows.append((avg*(inv or 1),inv,avg,cur))
    rows.sort(reverse=True)
    print("==",name,"total us",round(sum(r[0] for r in rows)))
    for r in rows[:18]: print("%8.1f  n=%4s avg=%7.2f  %s"%r)
