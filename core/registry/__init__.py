"""The plugin system: the plugin manager, the registered entries, and the checks on what plugins register.

Built-in plugins are the modules in `BUILTIN_PLUGINS`; third-party plugins come through the ``dcbench`` entry-point
group (`dcbench.registry.manager`)."""

from dcbench.registry.columns import Column
from dcbench.registry.entry import BuiltPlugin, PluginEntry, PluginInfo, blamed_on
from dcbench.registry.kinds import BUILTIN_PLUGINS, DEMAND_KINDS, KINDS, PLURALS
from dcbench.registry.manager import PluginLoadWarning, Registry, create_registry, get_registry, reset_registry

__all__ = ["BUILTIN_PLUGINS", "BuiltPlugin", "Column", "DEMAND_KINDS", "KINDS", "PLURALS", "PluginEntry",
           "PluginInfo", "PluginLoadWarning", "Registry", "blamed_on", "create_registry", "get_registry",
           "reset_registry"]
