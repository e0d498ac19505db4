"""Messages and run events keep their references to their session and run without foreign-key
constraints (runs/models.py, RunEvent.run): the checks locked and logged those rows at each turn."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0007_turn_writes'),
    ]

    operations = [
        migrations.AlterField(
            model_name='message',
            name='session',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='runs.session'),
        ),
        migrations.AlterField(
            model_name='runevent',
            name='run',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='runs.run'),
        ),
    ]
