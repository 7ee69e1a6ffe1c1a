"""The plugin-facing API, above the privacy floor: the contracts of methods, evaluators and
datasets (``contracts``), their one declaration (``declare``) and the lazy registries (``registry``)."""
