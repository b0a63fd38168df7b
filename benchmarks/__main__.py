"""Run one benchmark by name: python -m benchmarks NAME [ARGS...]."""

import importlib
import sys

BENCHMARKS = {
    'agent': 'benchmarks.agent',
    'api': 'benchmarks.api',
    'cloud': 'benchmarks.cloud',
    'host': 'benchmarks.host',
    'milp': 'benchmarks.milp',
    'nfvnice': 'benchmarks.nfvnice',
    'optimizer': 'benchmarks.optimizer',
    'scheduler': 'benchmarks.scheduler',
    'profiler': 'benchmarks.profiler',
    'prediction': 'benchmarks.prediction',
    'ondemand': 'benchmarks.ondemand',
    'seeds': 'benchmarks.seeds',
}


def main(argv):
    if not argv or argv[0] not in BENCHMARKS:
        print('usage: tox -e bench -- NAME [ARGS]; NAME is one of: %s'
              % ', '.join(sorted(BENCHMARKS)), file=sys.stderr)
        return 2
    module = importlib.import_module(BENCHMARKS[argv[0]])
    return module.main(argv[1:])


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
