"""rankbench.objective"""
