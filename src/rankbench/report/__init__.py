"""rankbench.report"""
