"""The bundled library (architectures, workloads, mappings, design spaces) as package data.

Installed as the ``llmulator_library`` package so that a wheel or a non-editable install carries it;
``llmulator.library`` finds it through this package. The repository root keeps links
(``arch_specs``, ``workloads``, ``mappings``, ``spaces``) to these folders.
"""
