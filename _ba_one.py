import sys, time
from tests.host import boundary_attacks as ba
names = sys.argv[1:]
with ba.Lab() as lab:
    for a in ba.ATTACKS:
        if names and a.__name__ not in names: continue
        t=time.time()
        try:
            o = a(lab)
            print('%-24s weakened=%-5s real=%-5s %.1fs\n   %s' % (o.name, o.against_weakened, o.against_real, time.time()-t, o.detail), flush=True)
        except Exception as e:
            import traceback; traceback.print_exc()
    print(ba.real_daemon_status(lab))
