" Recognise Splash policy files.
autocmd BufRead,BufNewFile *.splashpol setfiletype splashpol
