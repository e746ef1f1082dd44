// Placeholder: the Apple-shaped API lands with the payment issue; built-in plugin registration lives here.
