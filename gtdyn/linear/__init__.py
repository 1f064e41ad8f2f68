"""linear"""
