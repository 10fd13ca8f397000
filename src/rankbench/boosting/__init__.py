"""rankbench.boosting"""
