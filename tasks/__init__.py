"""SeqIO task registrations for lever-jax (imports nothing here: ``import tasks.lever_tasks``
registers the tasks and pulls in seqio + TensorFlow; the TF-free twin of the registry is
``lever_jax.inputs.examples.discover_specs`` / ``find_spec``)."""
