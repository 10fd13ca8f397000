"""scikit-learn style rankers: fit(X, y, qid=...), decision_function(X)."""
