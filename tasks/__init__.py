"""SeqIO task registrations for lever-jax: the task module that users and gin files import, as in
t5x (``import tasks.lever_tasks`` or ``lever-jax train --task_module tasks.lever_tasks`` registers
the tasks and pulls in seqio + TensorFlow; nothing is imported here). ``tasks`` imports lever_jax,
never the reverse; the TF-free twin of the registry is ``lever_jax.inputs.examples.discover_specs``
/ ``find_spec``."""
