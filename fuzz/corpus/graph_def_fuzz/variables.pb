
1
rread_variable"
variable
J
v*

nnegr^r*2/cpu:1
/
aassign_variablen"
variable
J
v

gno_opn^a(