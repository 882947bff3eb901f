import json,sys,collections
for f in sys.argv[1:]:
    d=json.load(open(f))
    L=d
    print(f)
    tot=sum(l['ms'] for l in L)
    by=collections.defaultdict(lambda:[0,0.0])
    for l in L:
        name=l.get('name','')
        key=l['op']
        if '/fc1/' in name or '/fc2/' in name: key='SE '+key
        if l['op']=='GlobalAveragePool' and ('avgpool' in name or '/block.2/' in name or 'block.' in name): key='SE GAP'
        by[key][0]+=1; by[key][1]+=l['ms']
    print('total %.3f ms over %d steps'%(tot,len(L)))
    for k,(n,ms) in sorted(by.items(), key=lambda x:-x[1][1]): print('  %-24s %3d %.3f'%(k,n,ms))
    for l in L:
        if '/fc1/' in l.get('name','') or '/fc2/' in l.get('name','') or l['op'] in('GlobalAveragePool','Mul'):
            print('   %.4f %s %s %s'%(l['ms'],l['op'],l.get('tactic',''),l.get('name','')[-50:]))
