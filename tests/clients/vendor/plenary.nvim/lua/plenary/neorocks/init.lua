error "neorocks is no longer supported. Please use packer.nvim or other project for neorocks usage."
