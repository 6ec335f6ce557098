"""Security tests: attacks with witnesses outside phoenix-lsp (a secret found in a request the fake model
provider received, a server still answering after a FIFO was planted), one module per class of attack."""
