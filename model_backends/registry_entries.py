"""Backend kinds provided by this folder's offline modules, as import paths
(the plugin hook returns these; nothing heavy is imported by listing)."""

BACKENDS: dict[str, str] = {
    "local": "avhb.model_backends.local:LocalBackend",
    "cascade": "avhb.model_backends.cascade:CascadeBackend",
    "random": "avhb.model_backends.baselines:RandomBackend",
    "scripted": "avhb.model_backends.baselines:ScriptedBackend",
}
