"""Rubric YAML texts shared by the rubric tests (line numbers matter: the loader tests count on them)."""

VALID = """\
id: demo
version: "1"
name: Demo
mode: grading_scale
fields: [context, response]
pass_threshold: 0.7
criteria:
  - id: helpful
    name: Helpfulness
    definition: Does the response help?
    weight: 0.3
    grades:
      - {label: Bad, value: 1}
      - {label: Good, value: 5}
  - id: truthful
    name: Truthfulness
    definition: Is it true?
    weight: 0.3
    grades:
      - {label: Bad, value: 1}
      - {label: Good, value: 5}
  - id: harmless
    name: Harmlessness
    definition: Is it harmless?
    weight: 0.4
    grades:
      - {label: Bad, value: 1}
      - {label: Good, value: 5}
"""

POINTS = """\
id: points
version: "2"
name: Points
mode: point_deduction
fields: [response]
max_score: 100
pass_threshold: 80
criteria:
  - id: central
    name: Central claim
    definition: A central claim is wrong.
    points: 10
    grades:
      - {label: "No", value: 0}
      - {label: "Yes", value: 1}
"""
