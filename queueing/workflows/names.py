"""The names of the workflows' internal jobs: canvas.py sends them, jobs.py registers
them. Apart so that registering them (queueing's ready(), in every worker) does not
import the canvas, the batches and the dispatch of a workflow's steps (issue 52)."""
START_JOB = "queueing.workflows.start"  # after a chain's jobs: a group or chord, and the rest
CONTINUE_JOB = "queueing.workflows.continue"  # a group's then: the rest of the chain
CHORD_CALLBACK_JOB = "queueing.workflows.chord_callback"  # a chord's then: its callback
