"""rankbench.optim"""
