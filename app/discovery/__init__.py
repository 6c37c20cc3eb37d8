"""Tool discovery: the keyword index, the manifest, and the `search_tools` meta-tool."""
