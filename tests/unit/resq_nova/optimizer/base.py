"""Small snapshots for the optimizer's unit tests."""


def host(name, domains=((6, 9),), clos=3, dom_clos=None, **extra):
    doc = {'name': name, 'clos': clos, 'disabled': False,
           'domains': [{'id': i, 'cores': c, 'ways': w, 'reserved_ways': 2}
                       for i, (c, w) in enumerate(domains)]}
    if dom_clos is not None:
        for dom in doc['domains']:
            dom['clos'] = dom_clos
    doc.update(extra)
    return doc


def inst(uuid, host_name, domain=0, cores=1, ways=2, clos=1,
         migratable=True, **extra):
    doc = {'uuid': uuid, 'host': host_name, 'domain': domain, 'cores': cores,
           'ways': ways, 'clos': clos, 'migratable': migratable}
    doc.update(extra)
    return doc


def snapshot(hosts, instances, groups=()):
    return {'hosts': list(hosts), 'instances': list(instances),
            'server_groups': list(groups)}
