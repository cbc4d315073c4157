"""Support verifiers (DEL-8): does a passage support, contradict, or merely give context for a claim?"""
