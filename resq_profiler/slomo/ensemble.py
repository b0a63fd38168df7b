#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""A fitted gradient-boosting ensemble as plain data, and its evaluation.

scikit-learn fits the model (:func:`fit`); what is kept is its trees as
lists of numbers (:func:`export`), which a JSON document carries and
:class:`Ensemble` evaluates without scikit-learn and without unpickling
anything. The evaluation follows scikit-learn's: inputs rounded to 32-bit
floats, ``x <= threshold`` goes left, the prediction is the initial
constant plus the learning rate times the sum of the leaves reached.
"""

import math
import struct

LEAF = -1
DEFAULT_PARAMS = {'n_estimators': 150, 'max_depth': 3,
                  'learning_rate': 0.08, 'subsample': 0.8,
                  'random_state': 0}
_F32 = struct.Struct('f')


def _f32(value):
    """``value`` rounded to a 32-bit float, as scikit-learn's trees see it."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        # Beyond float32 (some Python versions refuse to pack it).
        return math.copysign(math.inf, value)


def fit(rows, targets, params=None):
    """Fit a :class:`sklearn.ensemble.GradientBoostingRegressor`.

    :returns: the exported ensemble (see :func:`export`).
    """
    # Imported here: only training needs scikit-learn.
    from sklearn import ensemble

    merged = dict(DEFAULT_PARAMS, **(params or {}))
    model = ensemble.GradientBoostingRegressor(loss='squared_error',
                                               **merged)
    model.fit(rows, targets)
    return export(model)


def export(model):
    """The trees of a fitted regressor as plain data.

    :param model: a fitted squared-error
        :class:`~sklearn.ensemble.GradientBoostingRegressor`.
    :returns: ``{"init", "learning_rate", "n_features", "trees"}``.
    """
    trees = []
    for (estimator,) in model.estimators_:
        t = estimator.tree_
        left = [int(v) for v in t.children_left]
        trees.append({
            'feature': [int(f) if left[i] != LEAF else LEAF
                        for i, f in enumerate(t.feature)],
            'threshold': [float(v) if left[i] != LEAF else 0.0
                          for i, v in enumerate(t.threshold)],
            'left': left,
            'right': [int(v) for v in t.children_right],
            'value': [float(v) for v in t.value[:, 0, 0]],
        })
    return {'init': float(model.init_.constant_[0][0]),
            'learning_rate': float(model.learning_rate),
            'n_features': int(model.n_features_in_),
            'trees': trees}


def mean(fits):
    """One exported ensemble that predicts the mean of ``fits``.

    Bagging over training draws: every fit's trees, their leaves divided
    by the number of fits, after the mean of the initial constants. The
    fits must share their learning rate and number of features (draws of
    one training, fitted with the same parameters); :class:`Ensemble`
    then evaluates the mean as it evaluates any fit, and a document keeps
    its format. One fit is returned as it is.

    :raises ValueError: for no fits, or fits that do not share both.
    """
    fits = list(fits)
    if not fits:
        raise ValueError('no fits to take the mean of')
    if len(fits) == 1:
        return fits[0]
    rate, n_features = fits[0]['learning_rate'], fits[0]['n_features']
    for k, fit in enumerate(fits):
        if (fit['learning_rate'], fit['n_features']) != (rate, n_features):
            raise ValueError(
                'fit %d has learning rate %r and %d features, fit 0 %r and '
                '%d: the mean of ensembles needs one learning rate and one '
                'feature set' % (k, fit['learning_rate'], fit['n_features'],
                                 rate, n_features))
    scale = 1.0 / len(fits)
    trees = [dict(tree, value=[v * scale for v in tree['value']])
             for fit in fits for tree in fit['trees']]
    return {'init': sum(fit['init'] for fit in fits) * scale,
            'learning_rate': rate, 'n_features': n_features,
            'trees': trees}


def check(doc, where='ensemble'):
    """Structural checks a JSON schema cannot make.

    Every tree is a proper binary tree rooted at node 0 (children after
    their parent, each node reached once), features index the input and
    every number is finite.

    :raises ValueError: naming the tree and node.
    """
    n_features = doc['n_features']
    for name in ('init', 'learning_rate'):
        if not math.isfinite(doc[name]):
            raise ValueError('%s.%s is not a finite number' % (where, name))
    for k, tree in enumerate(doc['trees']):
        here = '%s.trees[%d]' % (where, k)
        size = len(tree['left'])
        for key in ('feature', 'threshold', 'right', 'value'):
            if len(tree[key]) != size:
                raise ValueError('%s: "%s" has %d entries, "left" %d'
                                 % (here, key, len(tree[key]), size))
        seen = set()
        for i in range(size):
            left, right = tree['left'][i], tree['right'][i]
            if not (math.isfinite(tree['threshold'][i])
                    and math.isfinite(tree['value'][i])):
                raise ValueError('%s: node %d has a non-finite number'
                                 % (here, i))
            if left == LEAF:
                if right != LEAF:
                    raise ValueError('%s: node %d has one child' % (here, i))
                continue
            if not 0 <= tree['feature'][i] < n_features:
                raise ValueError('%s: node %d splits on feature %d of %d'
                                 % (here, i, tree['feature'][i], n_features))
            for child in (left, right):
                if not i < child < size or child in seen:
                    raise ValueError('%s: node %d has child %d, which is not'
                                     ' a fresh node after it' % (here, i,
                                                                 child))
                seen.add(child)


class Ensemble:
    """Evaluates an exported ensemble (validated by :func:`check`)."""

    def __init__(self, doc):
        self.init = doc['init']
        self.rate = doc['learning_rate']
        self.n_features = doc['n_features']
        self._trees = [(t['feature'], t['threshold'], t['left'], t['right'],
                        t['value']) for t in doc['trees']]

    def predict(self, row):
        """The model's output for one feature vector."""
        if len(row) != self.n_features:
            raise ValueError('expected %d features, got %d'
                             % (self.n_features, len(row)))
        x = [_f32(v) for v in row]
        total = 0.0
        for feature, threshold, left, right, value in self._trees:
            node = 0
            while left[node] != LEAF:
                if x[feature[node]] <= threshold[node]:
                    node = left[node]
                else:
                    node = right[node]
            total += value[node]
        return self.init + self.rate * total
