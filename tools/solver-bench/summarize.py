import csv, sys, statistics, glob, collections
rows=[]
for f in sys.argv[1:]:
    for r in csv.reader(open(f)):
        if r[0]!='ROW' or r[1]=='backend': continue
        rows.append(dict(zip(['_','backend','set','B','seed','mode','status','obj','ms','all','sol','check','bf'],r)))
g=collections.defaultdict(list)
for r in rows: g[(r['backend'],r['set'],int(r['B']))].append(r)
print('| backend | set | B | n | optimal | infeasible | other | median ms | max ms | checks | brute force |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for k in sorted(g):
    rs=g[k]; ms=[float(r['ms']) for r in rs]
    st=collections.Counter(r['status'] if not r['status'].startswith('error') else 'error' for r in rs)
    chk=collections.Counter(r['check'] for r in rs)
    bf=collections.Counter(r['bf'].split(';')[0] for r in rs)
    other={s:c for s,c in st.items() if s not in('optimal','infeasible')}
    print(f"| {k[0]} | {k[1]} | {k[2]} | {len(rs)} | {st.get('optimal',0)} | {st.get('infeasible',0)} | {other or ''} | {statistics.median(ms):.2f} | {max(ms):.2f} | {dict(chk)} | {dict(bf)} |")
# cross-backend agreement
by=collections.defaultdict(dict)
for r in rows: by[(r['set'],int(r['B']),int(r['seed']))][r['backend']]=r
dis=0; cmp=0
for k,d in sorted(by.items()):
    vals={b:(r['status'],r['obj']) for b,r in d.items()}
    ref=[v for v in vals.values() if v[0]=='optimal']
    for b,(s,o) in vals.items():
        for b2,(s2,o2) in vals.items():
            if b>=b2: continue
            if s in('optimal','infeasible') and s2 in('optimal','infeasible'):
                cmp+=1
                if s!=s2 or (s=='optimal' and abs(float(o)-float(o2))/abs(float(o2))>1e-6):
                    dis+=1; print('DISAGREE',k,b,s,o,d[b]['sol'],'|',b2,s2,o2,d[b2]['sol'])
print('pairwise comparisons',cmp,'disagreements',dis)
